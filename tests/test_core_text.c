/* The text helpers of src/core on the bytes input files and names bring
 * into messages and numbers:
 *  - a message cut to fit keeps whole UTF-8 characters at both ends of the
 *    cut, and its control characters (C0, DEL, and C1 as UTF-8 "\xc2\x80" ..
 *    "\xc2\x9f") are written out, whether it fits or not; a lone "\xc2" or a
 *    no-break space (U+00A0) is text, not a control;
 *  - a number field starts with its number: any blank strtod would skip
 *    (space, tab, \v, \f, \n, \r) refuses it; an overflow is refused, an
 *    underflow is the subnormal or zero it rounds to; float fields refuse
 *    NaN and a field longer than a number can be. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "src/core/error.h"
#include "src/core/parse.h"

Test(core_text, a_cut_keeps_whole_utf8_characters)
{
    /* cap 20: a head of 4 bytes, "...", a tail of 12 */
    /* head: byte 4 is the second byte of "é" (c3 a9 at 3..4): the head stops
     * before the "é" */
    const char *src = "abc\xc3\xa9" "defghijklmnopq" "r\xe2\x82\xac" "stuvwxyz012";
    size_t len = strlen(src); /* 34: the tail would start at byte 22, inside the euro sign */
    char out[20];
    pl__msg_fit(out, sizeof out, src, len);
    cr_assert_str_eq(out, "abc...stuvwxyz012");
    /* without multi-byte characters: exactly 4 + 3 + 12 bytes */
    pl__msg_fit(out, sizeof out, "0123456789abcdefghijklmnopqrstuvwxyz", 36);
    cr_assert_str_eq(out, "0123...opqrstuvwxyz");
    /* no room for a gap: the start only */
    char small[6];
    pl__msg_fit(small, sizeof small, "0123456789", 10);
    cr_assert_str_eq(small, "01234");
}

Test(core_text, control_characters_are_written_out)
{
    char out[64];
    /* C1 NEL (U+0085) as UTF-8, DEL, a C0 escape; tabs kept on request */
    const char *in = "a\xc2\x85" "b\x7f" "c\x1b\t";
    size_t n = pl__ctrl_escape(out, sizeof out, in, strlen(in), 1);
    cr_assert_str_eq(out, "a\\u0085b\\x7fc\\x1b\t");
    cr_assert_eq(n, strlen(out));
    pl__ctrl_escape(out, sizeof out, in, strlen(in), 0);
    cr_assert_str_eq(out, "a\\u0085b\\x7fc\\x1b\\x09");
    /* not controls: U+00A0 (c2 a0), and a "\xc2" that ends the text */
    pl__ctrl_escape(out, sizeof out, "x\xc2\xa0y\xc2", 5, 1);
    cr_assert_str_eq(out, "x\xc2\xa0y\xc2");
    /* an escape that does not fit whole is left out */
    char tiny[6];
    cr_assert_eq(pl__ctrl_escape(tiny, sizeof tiny, "ab\x01", 3, 1), 2);
    cr_assert_str_eq(tiny, "ab");
    cr_assert_eq(pl__ctrl_escape(tiny, 0, "ab", 2, 1), 0);
}

Test(core_text, messages_escape_controls_fitting_or_not)
{
    pl_err err = {0};
    /* a short message with a C1 control from a name */
    cr_assert_eq(pl__err(&err, -5, "gene '%s' unknown", "x\xc2\x9by"), -5);
    cr_assert_str_eq(err.msg, "gene 'x\\u009by' unknown");
    cr_assert_eq(err.code, -5);
    /* a long one: cut in the middle, its end (the reason) kept, escaped */
    char name[2 * PL_ERR_MSG_MAX];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    pl__err(&err, -7, "%s: bad byte \x01 here", name);
    size_t m = strlen(err.msg);
    cr_assert_lt(m, sizeof err.msg);
    const char *tail = ": bad byte \\x01 here";
    cr_assert_str_eq(err.msg + m - strlen(tail), tail);
    cr_assert(strstr(err.msg, "n...n"), "%s", err.msg);
    /* no err: the code alone */
    cr_assert_eq(pl__err(NULL, -9, "x"), -9);
    cr_assert_eq(pl__err_code(NULL, -11), -11);
    cr_assert_eq(pl__err_prefix(NULL, "p"), 0);
    pl__err(&err, -3, "reason");
    cr_assert_eq(pl__err_prefix(&err, "%s line %d", "f.tsv", 4), -3);
    cr_assert_str_eq(err.msg, "f.tsv line 4: reason");
}

static pl__field field(const char *s)
{
    pl__field f = {s, (uint32_t)strlen(s), 1};
    return f;
}

Test(core_text, number_fields)
{
    static const char *const blank_first[] = {" 1", "\t1", "\v1", "\f1", "\n1", "\r1"};
    double d;
    float x;
    for (int i = 0; i < 6; i++) {
        pl__field f = field(blank_first[i]);
        cr_assert_eq(pl__parse_double(&f, &d), -1, "field %d", i);
        cr_assert_eq(pl__parse_float(&f, &x), -1, "field %d", i);
    }
    pl__field f = field("1e400");
    cr_assert_eq(pl__parse_double(&f, &d), -1, "overflow");
    f = field("-1e400");
    cr_assert_eq(pl__parse_double(&f, &d), -1, "overflow");
    f = field("1e-400");
    cr_assert_eq(pl__parse_double(&f, &d), 0, "underflow rounds to zero");
    cr_assert_eq(d, 0.0);
    f = field("4e-320");
    cr_assert_eq(pl__parse_double(&f, &d), 0);
    cr_assert(d > 0 && d < 1e-300, "subnormal %g", d);
    f = field("nan");
    cr_assert_eq(pl__parse_double(&f, &d), -1);
    cr_assert_eq(pl__parse_float(&f, &x), -1);
    f = field("1e39");
    cr_assert_eq(pl__parse_float(&f, &x), PL_ERANGE);
    f = field("-inf");
    cr_assert_eq(pl__parse_float(&f, &x), 0);
    cr_assert(isinf(x) && x < 0);
    f = field("1.5x");
    cr_assert_eq(pl__parse_float(&f, &x), -1);
    char longnum[80];
    memset(longnum, '1', sizeof longnum - 1);
    longnum[sizeof longnum - 1] = '\0';
    f = field(longnum);
    cr_assert_eq(pl__parse_float(&f, &x), -1, "longer than a number");
    cr_assert_eq(pl__parse_double(&f, &d), -1);
    f = field("0.25");
    cr_assert_eq(pl__parse_float(&f, &x), 0);
    cr_assert_eq(x, 0.25f);
}
