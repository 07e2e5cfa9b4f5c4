//! The committed C header `include/mooncake_meta.h` is exactly what the
//! pinned cbindgen generates from src/, and it keeps the conventions of
//! the C boundary (CONVENTIONS.md): every function documented with ownership
//! and thread safety, every fallible function taking `err` last, one prefix,
//! status codes equal to the library's.
//!
//! `MOONCAKE_META_COMMITTED_HEADER` points the checks at another file (the
//! mutation self-test in scripts/check-header.sh uses it);
//! `MOONCAKE_META_BLESS=1` copies the generated header over the committed
//! one instead of comparing (`make bless-header`).

use mooncake_meta_core::ErrorKind;
use std::ffi::CStr;
use std::path::PathBuf;

const GENERATED: &str = env!("MOONCAKE_META_GENERATED_HEADER");

fn committed_path() -> PathBuf {
    std::env::var_os("MOONCAKE_META_COMMITTED_HEADER")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/include/mooncake_meta.h"
            ))
        })
}

fn committed() -> String {
    let path = committed_path();
    std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}; run `make bless-header`",
            path.display()
        )
    })
}

// CONVENTIONS: the header is generated into OUT_DIR and compared byte for byte.
#[test]
fn committed_header_matches_generated() {
    let generated = std::fs::read(GENERATED).expect("build.rs wrote the generated header");
    let path = committed_path();
    if std::env::var_os("MOONCAKE_META_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write the committed header");
        eprintln!("blessed {} from {GENERATED}", path.display());
        return;
    }
    let committed = std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}\nrun `make bless-header` to create it",
            path.display()
        )
    });
    if committed == generated {
        return;
    }
    let (old, new) = (
        String::from_utf8_lossy(&committed),
        String::from_utf8_lossy(&generated),
    );
    let (old, new): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let first = old
        .iter()
        .zip(&new)
        .position(|(a, b)| a != b)
        .unwrap_or(old.len().min(new.len()));
    let context = |lines: &[&str]| {
        lines
            .iter()
            .enumerate()
            .skip(first.saturating_sub(2))
            .take(5)
            .map(|(i, l)| format!("  {:5} | {l}\n", i + 1))
            .collect::<String>()
    };
    panic!(
        "{} differs from the header cbindgen generates (first difference at line {}).\n\
         committed:\n{}generated:\n{}\
         See everything with:  diff -u {} {GENERATED}\n\
         If the change to src/ is intended, update the committed header with:  make bless-header",
        path.display(),
        first + 1,
        context(&old),
        context(&new),
        path.display(),
    );
}

/// One top-level C statement of the header, with the comment right above it.
#[derive(Debug)]
struct Statement {
    line: usize,
    text: String,
    doc: Option<String>,
}

impl Statement {
    fn is_function(&self) -> bool {
        !self.text.starts_with("typedef") && self.text.contains('(')
    }

    /// (return type, name, parameters) of a function declaration.
    fn signature(&self) -> (&str, &str, Vec<&str>) {
        let open = self
            .text
            .find('(')
            .expect("functions have a parameter list");
        let close = self
            .text
            .rfind(')')
            .expect("functions have a parameter list");
        let head = self.text[..open].trim_end();
        let split = head
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let params = self.text[open + 1..close]
            .split(',')
            .map(str::trim)
            .collect();
        (head[..split].trim(), &head[split..], params)
    }
}

/// Splits a cbindgen header into statements: comments are dropped (the last
/// one before a statement is kept as its doc), preprocessor lines and blank
/// lines break doc adjacency, and a statement ends at `;` outside braces.
fn statements(header: &str) -> Vec<Statement> {
    let mut out = Vec::new();
    let mut doc: Option<String> = None;
    let mut comment: Option<String> = None;
    let mut current: Option<Statement> = None;
    let mut depth = 0i32;
    for (i, raw) in header.lines().enumerate() {
        let t = raw.trim();
        if let Some(c) = comment.as_mut() {
            c.push_str(t);
            c.push('\n');
            if t.ends_with("*/") {
                let c = comment.take().unwrap();
                if current.is_none() {
                    doc = Some(c);
                }
            }
            continue;
        }
        if t.starts_with("/*") {
            if t.ends_with("*/") && t.len() > 3 {
                if current.is_none() {
                    doc = Some(t.to_owned());
                }
            } else {
                comment = Some(format!("{t}\n"));
            }
            continue;
        }
        if current.is_none() {
            let scaffolding = t == "extern \"C\" {" || t.starts_with("}  // extern");
            if t.is_empty() || t.starts_with('#') || t.starts_with("//") || scaffolding {
                doc = None;
                continue;
            }
            current = Some(Statement {
                line: i + 1,
                text: String::new(),
                doc: doc.take(),
            });
        }
        let s = current.as_mut().unwrap();
        if !s.text.is_empty() {
            s.text.push(' ');
        }
        s.text.push_str(t);
        depth += t.matches('{').count() as i32 - t.matches('}').count() as i32;
        if depth == 0 && t.ends_with(';') {
            out.push(current.take().unwrap());
        }
    }
    assert!(current.is_none(), "unterminated statement at end of header");
    out
}

fn functions(header: &str) -> Vec<Statement> {
    statements(header)
        .into_iter()
        .filter(Statement::is_function)
        .collect()
}

#[test]
fn parser_sees_every_function() {
    let fns = functions(&committed());
    let names: Vec<&str> = fns.iter().map(|f| f.signature().1).collect();
    for expected in [
        "mooncake_meta_version",
        "mooncake_meta_error_free",
        "mooncake_meta_config_new",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} not found in {names:?}"
        );
    }
}

// CONVENTIONS: header doc comments say who owns what and what may be called concurrently.
#[test]
fn every_function_is_documented_with_ownership_and_thread_safety() {
    let mut missing = Vec::new();
    for f in functions(&committed()) {
        let name = f.signature().1.to_owned();
        match &f.doc {
            None => missing.push(format!(
                "line {}: {name} has no doc comment right above it",
                f.line
            )),
            Some(doc) => {
                for needed in ["Ownership:", "Thread safety:"] {
                    if !doc.contains(needed) {
                        missing.push(format!(
                            "line {}: {name}'s doc comment lacks \"{needed}\"",
                            f.line
                        ));
                    }
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "every exported function needs a doc comment (`///` in src/) with an \
         \"Ownership:\" and a \"Thread safety:\" line:\n  {}",
        missing.join("\n  ")
    );
}

// CONVENTIONS: error details through an optional per-call out-parameter.
#[test]
fn fallible_functions_return_a_status_and_take_err_last() {
    for f in functions(&committed()) {
        let (ret, name, params) = f.signature();
        let takes_err = params.last().is_some_and(|p| {
            p.trim_start_matches("struct ")
                .split_whitespace()
                .collect::<Vec<_>>()
                == ["mooncake_meta_error", "**err"]
        });
        if ret == "mooncake_meta_status" {
            assert!(takes_err, "line {}: {name} returns a status but its last parameter is not `mooncake_meta_error **err`", f.line);
        } else {
            assert!(
                !takes_err,
                "line {}: {name} takes err but returns {ret}, not mooncake_meta_status",
                f.line
            );
        }
    }
}

#[test]
fn every_declared_name_has_the_prefix() {
    let header = committed();
    let mut bad = Vec::new();
    for line in header.lines() {
        if let Some(rest) = line.strip_prefix("#define ") {
            let name = rest.split_whitespace().next().unwrap_or("");
            if !name.starts_with("MOONCAKE_META_") {
                bad.push(format!("constant {name}"));
            }
        }
    }
    for s in statements(&header) {
        let name = if s.is_function() {
            s.signature().1.to_owned()
        } else {
            // `typedef ... name;`: the last identifier.
            let body = s.text.trim_end_matches(';');
            body.rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .next()
                .unwrap_or("")
                .to_owned()
        };
        if !name.starts_with("mooncake_meta_") {
            bad.push(format!("line {}: {name}", s.line));
        }
    }
    assert!(
        bad.is_empty(),
        "names without the mooncake_meta_/MOONCAKE_META_ prefix: {bad:?}"
    );
}

#[test]
fn header_is_plain_ascii() {
    let header = committed();
    if let Some((i, line)) = header.lines().enumerate().find(|(_, l)| !l.is_ascii()) {
        panic!("line {}: non-ASCII character in the header: {line}", i + 1);
    }
}

// docs/CONTRACT.md §3.2: the header's status defines are the library's codes.
#[test]
fn status_defines_match_the_library() {
    let header = committed();
    let define = |name: &str| -> i32 {
        let prefix = format!("#define MOONCAKE_META_{name} ");
        let line = header
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no `{}` in the header", prefix.trim_end()));
        line[prefix.len()..].trim().parse().unwrap()
    };
    assert_eq!(define("OK"), 0);
    for kind in ErrorKind::ALL {
        let code = define(kind.name());
        let name =
            unsafe { CStr::from_ptr(mooncake_meta::status::mooncake_meta_status_name(code)) };
        assert_eq!(
            name.to_str().unwrap(),
            kind.name(),
            "MOONCAKE_META_{} = {code}",
            kind.name()
        );
    }
}

#[test]
fn version_defines_match_the_crate() {
    let header = committed();
    for (name, value) in [
        ("MAJOR", env!("CARGO_PKG_VERSION_MAJOR").to_owned()),
        ("MINOR", env!("CARGO_PKG_VERSION_MINOR").to_owned()),
        ("PATCH", env!("CARGO_PKG_VERSION_PATCH").to_owned()),
        ("STRING", format!("\"{}\"", env!("CARGO_PKG_VERSION"))),
    ] {
        let line = format!("#define MOONCAKE_META_VERSION_{name} {value}");
        assert!(header.lines().any(|l| l == line), "missing `{line}`");
    }
    let abi = format!(
        "#define MOONCAKE_META_ABI_VERSION {}",
        mooncake_meta::version::MOONCAKE_META_ABI_VERSION
    );
    assert!(header.lines().any(|l| l == abi), "missing `{abi}`");
}
