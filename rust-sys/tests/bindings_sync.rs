//! The committed declarations (`src/bindings.rs`) and bundled-mode
//! consistency test (`tests/abi_bundled.rs`) are what the generator makes of
//! the committed header, so the sys crate declares the whole header and
//! nothing else. Regenerate after a header change with
//! `MOONCAKE_META_BLESS=1 cargo test -p mooncake-meta-sys --test bindings_sync`.

mod header_gen;

use header_gen::{parse, parse_decl, Item, Prim, Ty};
use std::path::PathBuf;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn repo_root() -> PathBuf {
    crate_dir()
        .parent()
        .expect("rust-sys lives in the repository")
        .to_path_buf()
}

fn header() -> String {
    let path = repo_root().join("include/mooncake_meta.h");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Compares `generated` with the committed file, or writes it when blessing.
fn check_or_bless(relative: &str, generated: &str) {
    let path = crate_dir().join(relative);
    if std::env::var_os("MOONCAKE_META_BLESS").is_some() {
        std::fs::write(&path, generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed == generated {
        return;
    }
    let line = committed
        .lines()
        .zip(generated.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| committed.lines().count().min(generated.lines().count()));
    panic!(
        "rust-sys/{relative} is not what include/mooncake_meta.h generates (first difference at \
         line {}: committed {:?}, generated {:?}); regenerate it with \
         `MOONCAKE_META_BLESS=1 cargo test -p mooncake-meta-sys --test bindings_sync`",
        line + 1,
        committed.lines().nth(line),
        generated.lines().nth(line)
    );
}

// The declarations are the header's, item for item.
#[test]
fn committed_bindings_match_the_header() {
    let items = parse(&header());
    check_or_bless("src/bindings.rs", &header_gen::render_bindings(&items));
}

// The bundled consistency test covers every header item.
#[test]
fn committed_abi_test_matches_the_header() {
    let items = parse(&header());
    let index = header_gen::core_index(&repo_root().join("src"));
    check_or_bless(
        "tests/abi_bundled.rs",
        &header_gen::render_abi_test(&items, &index),
    );
}

/// Prototype names counted without the parser: a line that starts a
/// declaration (not indented, not a comment or preprocessor line) with
/// `mooncake_meta_NAME(` in it.
fn prototypes_by_scan(header: &str) -> Vec<String> {
    header
        .lines()
        .filter(|l| !l.starts_with([' ', '*', '/', '#', '}']) && l.contains('('))
        .filter_map(|l| {
            let open = l.find('(')?;
            let start = l[..open].rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))?;
            Some(l[start + 1..open].to_string())
        })
        .filter(|n| n.starts_with("mooncake_meta_"))
        .collect()
}

// The parser sees every prototype a plain scan of the header finds, and the
// committed bindings declare exactly those functions.
#[test]
fn every_header_function_is_declared() {
    let header = header();
    let scanned = prototypes_by_scan(&header);
    let parsed: Vec<String> = parse(&header)
        .iter()
        .filter(|i| matches!(i, Item::Function { .. }))
        .map(|i| i.name().to_string())
        .collect();
    assert_eq!(parsed, scanned);
    let bindings = std::fs::read_to_string(crate_dir().join("src/bindings.rs")).unwrap();
    let declared: Vec<String> = bindings
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub fn "))
        .map(|l| l[..l.find('(').unwrap()].to_string())
        .collect();
    assert_eq!(declared, scanned);
}

// C declarators become the Rust pointer types the C ABI means.
#[test]
fn declarators_translate_to_rust_pointer_types() {
    let plain = header_gen::Style { named: "", c: "" };
    let cases = [
        ("const char *name", "*const c_char"),
        ("char *buf", "*mut c_char"),
        ("const char *const *segments", "*const *const c_char"),
        ("const char **preferred_segments", "*mut *const c_char"),
        (
            "struct mooncake_meta_error **err",
            "*mut *mut mooncake_meta_error",
        ),
        (
            "const struct mooncake_meta_master *m",
            "*const mooncake_meta_master",
        ),
        ("const uint8_t *const *datas", "*const *const u8"),
        ("size_t cap", "usize"),
        ("int force", "c_int"),
        ("double ratio", "f64"),
        ("mooncake_meta_status status", "mooncake_meta_status"),
    ];
    for (decl, want) in cases {
        let (ty, _) = parse_decl(decl);
        assert_eq!(ty.unwrap().render(plain), want, "{decl}");
    }
    assert_eq!(
        parse_decl("void mooncake_meta_x"),
        (None, "mooncake_meta_x".to_string())
    );
    assert_eq!(
        parse_decl("const uint8_t *mooncake_meta_bytes_data").0,
        Some(Ty::Ptr {
            to_const: true,
            to: Box::new(Ty::Prim(Prim::U8))
        })
    );
}

// An unknown C type stops the generator instead of being guessed.
#[test]
#[should_panic(expected = "unknown to the generator")]
fn unknown_types_are_refused() {
    parse_decl("long long x");
}
