/* Numbers and labels from text fields: the parsing that more than one stage
 * needs (the build's text inputs, the import readers, the command line's
 * options). A field is a span of bytes, not a C string. */
#ifndef PL_CORE_PARSE_H
#define PL_CORE_PARSE_H

#include <stddef.h>
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

/** The length (2 to 4) of the well-formed UTF-8 sequence that starts with
 *  the non-ASCII byte p[0] within p[0..n), or 0 when it is not one
 *  (overlong, surrogate, above U+10FFFF, cut short, bad continuation). */
static inline size_t pl__utf8_seq(const unsigned char *p, size_t n)
{
    unsigned c = p[0], min;
    size_t len;
    if ((c & 0xE0) == 0xC0) {
        len = 2;
        min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3;
        min = 0x800;
    } else if ((c & 0xF8) == 0xF0 && c <= 0xF4) {
        len = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    unsigned cp = c & (0xFFu >> (len + 1));
    for (size_t k = 1; k < len; k++) {
        if ((p[k] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

#endif
