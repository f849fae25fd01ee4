//! drone/envsubst's own test vectors (its `eval_test.go`, `funcs_test.go` and `parse_test.go`, as
//! data), and what a real profile uses.

use std::collections::BTreeMap;

use super::*;

/// Variables and their values.
type Params<'a> = &'a [(&'a str, &'a str)];

fn expand(params: Params<'_>, input: &str) -> Result<String, SubstitutionError> {
    let params: BTreeMap<&str, &str> = params.iter().copied().collect();
    Template::parse(input)?.expand(&|name| params.get(name).map(|v| v.to_string()))
}

/// `eval_test.go`'s `TestExpand`, every case.
#[test]
fn the_librarys_expansion_vectors() {
    let z = "abcABC123ABCabc";
    let cases: &[(Params<'_>, &str, &str)] = &[
        (&[], "abcdEFGH28ij", "abcdEFGH28ij"),
        (&[("var01", "abcdEFGH28ij")], "${#var01}", "12"),
        (&[("var01", "abcdEFGH28ij")], "${var01^}", "AbcdEFGH28ij"),
        (&[("var01", "abcdEFGH28ij")], "${var01^^}", "ABCDEFGH28IJ"),
        (&[("var01", "ABCDEFGH28IJ")], "${var01,}", "aBCDEFGH28IJ"),
        (&[("var01", "ABCDEFGH28IJ")], "${var01,,}", "abcdefgh28ij"),
        (
            &[("path_name", "/home/bozo/ideas/thoughts.for.today")],
            "${path_name:11}",
            "ideas/thoughts.for.today",
        ),
        (
            &[("path_name", "/home/bozo/ideas/thoughts.for.today")],
            "${path_name:11:5}",
            "ideas",
        ),
        (&[("var", "abc")], "${var=xyz}", "abc"),
        (&[], "${var=xyz}", "xyz"),
        (
            &[("default_var", "foo")],
            "something ${var=${default_var}}",
            "something foo",
        ),
        (
            &[("default_var", "foo1")],
            "foo: ${var=${default_var}-suffix}",
            "foo: foo1-suffix",
        ),
        (
            &[("default_var", "foo1")],
            "foo: ${var=prefix${default_var}-suffix}",
            "foo: prefixfoo1-suffix",
        ),
        (&[], "${var:=xyz}", "xyz"),
        (&[("stringZ", z)], "${stringZ/%abc/XYZ}", "abcABC123ABCXYZ"),
        (&[("stringZ", z)], "${stringZ/#abc/XYZ}", "XYZABC123ABCabc"),
        (&[("stringZ", z)], "${stringZ//abc/xyz}", "xyzABC123ABCxyz"),
        (&[("stringZ", z)], "${stringZ/abc/xyz}", "xyzABC123ABCabc"),
        (
            &[("filename", "bash.string.txt")],
            "${filename#*.}",
            "string.txt",
        ),
        (&[("filename", "path/to/file")], "${filename#*/}", "to/file"),
        (
            &[("filename", "/path/to/file")],
            "${filename#*/}",
            "path/to/file",
        ),
        (&[("filename", "bash.string.txt")], "${filename##*.}", "txt"),
        (&[("filename", "path/to/file")], "${filename##*/}", "file"),
        (&[("filename", "/path/to/file")], "${filename##*/}", "file"),
        (
            &[("filename", "bash.string.txt")],
            "${filename%.*}",
            "bash.string",
        ),
        (
            &[("filename", "bash.string.txt")],
            "${filename%%.*}",
            "bash",
        ),
        (
            &[("var01", "abcdEFGH28ij")],
            "${var=${var01^^}}",
            "ABCDEFGH28IJ",
        ),
        (&[("var01", "abcdEFGH28ij")], "$${var01}", "${var01}"),
        (
            &[("var01", "abcdEFGH28ij")],
            "some text ${var01}$${var$${var01}$var01${var01}",
            "some text abcdEFGH28ij${var${var01}$var01abcdEFGH28ij",
        ),
        (
            &[("default_var", "foo")],
            "something $${var=${default_var}}",
            "something ${var=foo}",
        ),
        (&[("stringZ", "foo/bar")], r"${stringZ/\//-}", "foo-bar"),
        (
            &[("stringZ", "foo/bar/baz")],
            r"${stringZ//\//-}",
            "foo-bar-baz",
        ),
        (
            &[("default_var", "foo")],
            r"\\something ${var=${default_var}}",
            r"\\something foo",
        ),
        (&[("stringZ", "foo.bar")], "${stringZ/./}", "foobar"),
    ];
    for (params, input, want) in cases {
        assert_eq!(
            expand(params, input).as_deref(),
            Ok(*want),
            "{input} with {params:?}"
        );
    }
}

/// `funcs_test.go`'s cases of each function, through the expression that calls it.
#[test]
fn the_librarys_function_vectors() {
    let path = "/home/bozo/ideas/thoughts.for.today";
    let cases: &[(&str, &str, &str)] = &[
        // Substrings: out of range, negative positions, lengths past the end, not numbers.
        (path, "${v:11:5}", "ideas"),
        // `:-` is the default operator, not a negative position: the value is not empty.
        (path, "${v:-4}", path),
        ("abcdef", "${v:-3:2}", "abcdef"),
        (path, "${v: -5}", path), // " -5" is no integer: the value as it is.
        (path, "${v:100}", ""),
        (path, "${v:100:1}", ""),
        (path, "${v:30:100}", "today"),
        (path, "${v:x}", path),
        (path, "${v:1:x}", path),
        ("abc", "${v:-1}", "abc"),
        ("abcdef", "${v:${n}}", "abcdef"),
        ("abcdef", "${v:0:0}", ""),
        ("abcdef", "${v:1::2}", "bc"),
        ("abcdef", "${v:1:2:3}", "abcdef"), // "2:3" is no integer
        // Casing of an empty value; length in bytes.
        ("", "${v^}", ""),
        ("", "${v,}", ""),
        ("é", "${#v}", "2"),
        ("é", "${v^}", "É"),
        // Replacement: prefix and suffix need both words (an empty one is none); escapes.
        ("abcabc", "${v/#abc/}", "abcabc"),
        ("abcabc", "${v/%abc/}", "abcabc"),
        ("abcabc", "${v/#x/y}", "abcabc"),
        ("abcabc", "${v/%x/y}", "abcabc"),
        ("abcabc", "${v//b/}", "acac"),
        ("a/b", r"${v/a\/b/c}", "c"),
        ("a$b", "${v//$$/-}", "a-b"),
        // Globs: classes, negation, escapes, `?`; a malformed pattern leaves the value as it is.
        ("abc.txt", "${v#[a-b]}", "bc.txt"),
        ("abc.txt", "${v#[^b]}", "bc.txt"),
        ("abc.txt", "${v##?}", "bc.txt"),
        ("a*c", r"${v#a\*}", "c"),
        ("abc", "${v#[}", "abc"),
        ("abc", "${v#[a-]}", "abc"),
        // A suffix is matched reversed, the pattern too: "]cb[" is malformed.
        ("abc", "${v%[bc]}", "abc"),
        ("a/b/c", "${v%/*}", "a/b"),
        ("a/b/c", "${v%%/*}", "a"),
        ("aaa", "${v#a*}", "aa"),
        ("aaa", "${v##a*}", ""),
        ("aaa", "${v%*a}", "aa"),
    ];
    for (value, input, want) in cases {
        assert_eq!(
            expand(&[("v", value)], input).as_deref(),
            Ok(*want),
            "{input} of {value:?}"
        );
    }
}

/// The default operators all give the word when the value is empty, unlike bash: `:?` does not
/// fail, `:+` does not swap.
#[test]
fn every_default_operator_means_the_same() {
    for op in [":=", ":-", ":?", ":+", "="] {
        let input = format!("${{V{op}word}}");
        assert_eq!(expand(&[], &input).as_deref(), Ok("word"), "{input}");
        assert_eq!(
            expand(&[("V", "")], &input).as_deref(),
            Ok("word"),
            "{input}"
        );
        assert_eq!(expand(&[("V", "x")], &input).as_deref(), Ok("x"), "{input}");
        let empty = format!("${{V{op}}}");
        assert_eq!(expand(&[], &empty).as_deref(), Ok(""), "{empty}");
    }
    // `=` takes one `=`: the second is the word's.
    assert_eq!(expand(&[], "${V==x}").as_deref(), Ok("=x"));
}

/// `parse_test.go`'s refusals, and the ones its scanner makes of bash forms it does not know.
#[test]
fn the_librarys_refusals() {
    let cases: &[(&str, &str)] = &[
        ("${}", VARIABLE_NAME),
        ("${-x}", VARIABLE_NAME),
        ("${V", MISSING_CLOSING_BRACE),
        ("${V-word}", MISSING_CLOSING_BRACE),
        ("${V+word}", MISSING_CLOSING_BRACE),
        ("${V?}", MISSING_CLOSING_BRACE),
        ("${V:=x", FUNCTION_ARGUMENT),
        ("${V#}", FUNCTION_ARGUMENT),
        ("${V:}", FUNCTION_ARGUMENT),
        ("${V/a}", BAD_SUBSTITUTION),
        ("${V#a${W}}", BAD_SUBSTITUTION),
        ("${V^^^}", BAD_SUBSTITUTION),
        ("${#}", BAD_SUBSTITUTION),
        ("${#V:x}", BAD_SUBSTITUTION),
        ("${V/#abc}", BAD_SUBSTITUTION),
        ("${V/%abc}", BAD_SUBSTITUTION),
        ("${V//b}", BAD_SUBSTITUTION),
        ("${V/#}", BAD_SUBSTITUTION),
        ("${V/#/x}", FUNCTION_ARGUMENT),
    ];
    for (input, reason) in cases {
        let err = expand(&[], input).unwrap_err();
        assert_eq!(err.reason, *reason, "{input}");
        assert_eq!(err.line, 1, "{input}");
    }
    // A negative length, on which the library would panic.
    for input in ["x\n${V:1:-2}", "x\n${V:2:-10}"] {
        let err = expand(&[("V", "abcdef")], input).unwrap_err();
        assert_eq!(err.line, 2);
        assert!(input.ends_with(&err.expression), "{err}");
        assert!(err.reason.contains("panics"), "{err}");
    }
}

/// What the scanner accepts as a name: digits first too (`${1}`), and any Unicode letter; a `}` after
/// an expression is text; a backslash outside a replacement is text.
#[test]
fn names_and_the_variables_read() {
    assert_eq!(expand(&[("1", "one")], "${1}").as_deref(), Ok("one"));
    assert_eq!(expand(&[("né", "x")], "${né}").as_deref(), Ok("x"));
    assert_eq!(expand(&[("V", "v")], "${V}}").as_deref(), Ok("v}"));
    assert_eq!(expand(&[("V", "v")], r"\${V}").as_deref(), Ok(r"\v"));
    assert_eq!(expand(&[("V", "")], "${V:=a\\/b}").as_deref(), Ok("a\\/b"));
    assert_eq!(expand(&[], "${V:=${W:=${X:=deep}}}").as_deref(), Ok("deep"));
    let template = Template::parse("${A} ${B:=${C}} ${#D} ${E/x/${F}} $G $${H}").unwrap();
    assert_eq!(template.variables(), ["A", "B", "C", "D", "E", "F"]);
}

/// The form a real profile uses (issue 46): `${VAR=default}`, which the earlier parser refused.
#[test]
fn a_profiles_equals_default_renders() {
    let text =
        "args:\n- --namespace=${CAPI_NAMESPACE=openshift-cluster-api}\n- --v=${LOG_LEVEL:=2}\n";
    assert_eq!(
        expand(&[("LOG_LEVEL", "4")], text).as_deref(),
        Ok("args:\n- --namespace=openshift-cluster-api\n- --v=4\n")
    );
}

/// Escapes cost what the text costs: a bundle of nothing but `$$` (the budget allows 4 MiB) expands
/// in one pass, not by copying the rest of the text at each escape.
#[test]
fn many_escapes_expand_in_one_pass() {
    let text = format!("{}${{V}}{}", "$$".repeat(200_000), r"\/".repeat(10));
    let want = format!("{}v{}", "$".repeat(200_000), r"\/".repeat(10));
    assert_eq!(expand(&[("V", "v")], &text).as_deref(), Ok(want.as_str()));
    let replaced = format!("${{V//{}/x}}", r"\/".repeat(50_000));
    let value = "/".repeat(50_000);
    assert_eq!(expand(&[("V", &value)], &replaced).as_deref(), Ok("x"));
}
