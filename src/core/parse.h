/* Numbers and labels from text fields: the parsing that more than one stage
 * needs (the build's text inputs, the import readers, the command line's
 * options). A field is a span of bytes, not a C string. */
#ifndef PL_CORE_PARSE_H
#define PL_CORE_PARSE_H

#include <stdint.h>

typedef struct pl__field {
    const char *s;
    uint32_t len;
    uint32_t col; /* 1-based column of the first byte */
} pl__field;

/** 1 when field `f` is a missing label: empty, "NA", "NaN" or "nan". */
int pl__field_missing(const pl__field *f);

/** Parse a whole field as a finite-or-infinite double (strtod's syntax, no
 *  leading blanks, no NaN, no overflow). @return 0 or -1. */
int pl__parse_double(const pl__field *f, double *out);

/** Parse a whole field as a float32, correctly rounded: a decimal or
 *  hexadecimal number, or an infinity spelt as strtof() reads it ("inf",
 *  "-Infinity"). Magnitudes below the smallest float32 become subnormal or 0.
 *  @return 0; -1 when the field is not a number (or a NaN); PL_ERANGE when it
 *  is a finite number too large for float32 (beyond +-3.4028235e38). */
int pl__parse_float(const pl__field *f, float *out);

/** Parse a whole field as an unsigned 64-bit decimal: digits only (no blanks,
 *  sign or base prefix). @return 0 or -1 (also on overflow). */
int pl__parse_u64(const pl__field *f, uint64_t *out);

#endif
