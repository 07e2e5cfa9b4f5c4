//! The generator of the sys crate's declarations (`src/bindings.rs`) and of
//! the bundled-mode consistency test (`tests/abi_bundled.rs`), both from
//! `include/mooncake_meta.h`.
//!
//! The header is cbindgen output in a fixed shape, so a line-based reader is
//! enough: `/** doc */` blocks, `#define NAME VALUE`, `typedef struct X X;`
//! (opaque), `typedef struct X { fields } X;`, `typedef int32_t X;` and one
//! function prototype per declaration (possibly over several lines). Anything
//! else is an error, so a header construct the generator does not know fails
//! loudly instead of being skipped.
//!
//! Types come from the header alone; the core's Rust items are only read to
//! find the module that defines each name (for the consistency test's
//! paths), never their types, so the test compares two independent
//! descriptions. `#define`s carry no type in C: a negative value or
//! `MOONCAKE_META_OK` is a `mooncake_meta_status`, a string is `&str`, an
//! integer above `u32::MAX` a `u64` (the limits such as
//! `MOONCAKE_META_MAX_DURATION_MS`), every other integer a `u32` (the
//! consistency test checks the choice against the core's constant).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// A C type as written in the header.
#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    /// A fixed-width or C primitive, by its Rust spelling.
    Prim(Prim),
    /// A `mooncake_meta_*` type.
    Named(String),
    /// A pointer; `to_const` says whether the pointee is `const`.
    Ptr { to_const: bool, to: Box<Ty> },
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Prim {
    CChar,
    CInt,
    CVoid,
    U8,
    I32,
    U32,
    U64,
    I64,
    Usize,
    F64,
}

/// How a type's names are spelled in the generated text.
#[derive(Clone, Copy)]
pub struct Style {
    /// Prefix of `mooncake_meta_*` type names (`""`, `"sys::"`, ...).
    pub named: &'static str,
    /// Prefix of `c_char`/`c_int`/`c_void` (`""` or `"::core::ffi::"`).
    pub c: &'static str,
}

impl Ty {
    pub fn render(&self, style: Style) -> String {
        match self {
            Ty::Prim(p) => {
                let (c, s) = match p {
                    Prim::CChar => (true, "c_char"),
                    Prim::CInt => (true, "c_int"),
                    Prim::CVoid => (true, "c_void"),
                    Prim::U8 => (false, "u8"),
                    Prim::I32 => (false, "i32"),
                    Prim::U32 => (false, "u32"),
                    Prim::U64 => (false, "u64"),
                    Prim::I64 => (false, "i64"),
                    Prim::Usize => (false, "usize"),
                    Prim::F64 => (false, "f64"),
                };
                if c {
                    format!("{}{s}", style.c)
                } else {
                    s.to_string()
                }
            }
            Ty::Named(n) => format!("{}{n}", style.named),
            Ty::Ptr { to_const, to } => format!(
                "*{} {}",
                if *to_const { "const" } else { "mut" },
                to.render(style)
            ),
        }
    }

    /// The all-zero value of a field of this type.
    fn zero(&self) -> &'static str {
        match self {
            Ty::Ptr { to_const: true, .. } => "::core::ptr::null()",
            Ty::Ptr {
                to_const: false, ..
            } => "::core::ptr::null_mut()",
            Ty::Prim(Prim::F64) => "0.0",
            Ty::Prim(Prim::CVoid) | Ty::Named(_) => {
                panic!("no zero value for a field of type {self:?}")
            }
            Ty::Prim(_) => "0",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ConstValue {
    Int(i64),
    U32Max,
    Str(String),
}

#[derive(Debug, Clone)]
pub struct Field {
    pub doc: Vec<String>,
    pub name: String,
    pub ty: Ty,
}

#[derive(Debug, Clone)]
pub enum Item {
    Const {
        doc: Vec<String>,
        name: String,
        value: ConstValue,
    },
    Opaque {
        doc: Vec<String>,
        name: String,
    },
    Alias {
        doc: Vec<String>,
        name: String,
        target: Ty,
    },
    Struct {
        doc: Vec<String>,
        name: String,
        fields: Vec<Field>,
    },
    Function {
        doc: Vec<String>,
        name: String,
        params: Vec<Field>,
        ret: Option<Ty>,
    },
}

impl Item {
    pub fn name(&self) -> &str {
        match self {
            Item::Const { name, .. }
            | Item::Opaque { name, .. }
            | Item::Alias { name, .. }
            | Item::Struct { name, .. }
            | Item::Function { name, .. } => name,
        }
    }
}

fn base_type(word: &str) -> Ty {
    let prim = match word {
        "char" => Prim::CChar,
        "int" => Prim::CInt,
        "void" => Prim::CVoid,
        "uint8_t" => Prim::U8,
        "int32_t" => Prim::I32,
        "uint32_t" => Prim::U32,
        "uint64_t" => Prim::U64,
        "int64_t" => Prim::I64,
        "size_t" => Prim::Usize,
        "double" => Prim::F64,
        w if w.starts_with("mooncake_meta_") => return Ty::Named(w.to_string()),
        w => panic!("header type `{w}` is unknown to the generator"),
    };
    Ty::Prim(prim)
}

/// Parses a C declaration without initialiser (`const char *const *name`)
/// into its type and name; `void` alone (a return type) is `None`.
pub fn parse_decl(decl: &str) -> (Option<Ty>, String) {
    let spaced = decl.replace('*', " * ");
    let tokens: Vec<&str> = spaced.split_whitespace().collect();
    let (name, tokens) = tokens.split_last().expect("empty declaration");
    assert!(
        name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
        "declaration `{decl}` does not end with a name"
    );
    let mut i = 0;
    let mut pointee_const = false;
    while matches!(tokens.get(i), Some(&"const") | Some(&"struct")) {
        pointee_const |= tokens[i] == "const";
        i += 1;
    }
    let base = tokens
        .get(i)
        .unwrap_or_else(|| panic!("no type in `{decl}`"));
    let mut ty = base_type(base);
    i += 1;
    if tokens.get(i) == Some(&"const") {
        pointee_const = true;
        i += 1;
    }
    let mut pointers = 0;
    while i < tokens.len() {
        assert_eq!(tokens[i], "*", "unexpected `{}` in `{decl}`", tokens[i]);
        ty = Ty::Ptr {
            to_const: pointee_const,
            to: Box::new(ty),
        };
        pointers += 1;
        i += 1;
        pointee_const = false;
        if tokens.get(i) == Some(&"const") {
            pointee_const = true;
            i += 1;
        }
    }
    if pointers == 0 && *base == "void" {
        return (None, name.to_string());
    }
    (Some(ty), name.to_string())
}

/// Reads a `/** ... */` block starting at `lines[*i]`, advancing past it.
fn doc_block(lines: &[&str], i: &mut usize) -> Vec<String> {
    let mut doc = Vec::new();
    loop {
        let t = lines[*i].trim();
        *i += 1;
        let end = t.ends_with("*/");
        let body = t
            .trim_start_matches("/**")
            .trim_end_matches("*/")
            .trim_end();
        let body = body.strip_prefix('*').unwrap_or(body);
        let body = body.strip_prefix(' ').unwrap_or(body);
        if !(body.is_empty() && (t.starts_with("/**") || end)) {
            doc.push(body.to_string());
        }
        if end {
            return doc;
        }
    }
}

fn const_value(name: &str, text: &str) -> ConstValue {
    if let Some(s) = text.strip_prefix('"') {
        let s = s.strip_suffix('"').expect("unterminated string constant");
        assert!(!s.contains('\\'), "escapes in {name} are not supported");
        return ConstValue::Str(s.to_string());
    }
    if text == "UINT32_MAX" {
        return ConstValue::U32Max;
    }
    ConstValue::Int(
        text.parse()
            .unwrap_or_else(|_| panic!("constant {name} = `{text}` is not an integer")),
    )
}

/// Parses the header into its items, in header order.
pub fn parse(header: &str) -> Vec<Item> {
    let lines: Vec<&str> = header.lines().collect();
    let mut items = Vec::new();
    let mut doc: Vec<String> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim();
        if t.starts_with("/**") {
            doc = doc_block(&lines, &mut i);
            continue;
        }
        if t.starts_with("/*") {
            while !lines[i].contains("*/") {
                i += 1;
            }
            i += 1;
            doc.clear();
            continue;
        }
        i += 1;
        if t.is_empty() || t == "extern \"C\" {" || t.starts_with("}  //") {
            continue;
        }
        if let Some(rest) = t.strip_prefix("#define ") {
            let mut parts = rest.splitn(2, char::is_whitespace);
            let name = parts.next().unwrap().to_string();
            match parts.next().map(str::trim) {
                None => {} // the include guard
                Some(value) => items.push(Item::Const {
                    doc: std::mem::take(&mut doc),
                    value: const_value(&name, value),
                    name,
                }),
            }
            continue;
        }
        if t.starts_with('#') {
            continue; // include, include guard, __cplusplus
        }
        if let Some(rest) = t.strip_prefix("typedef struct ") {
            let name = rest.split_whitespace().next().unwrap().to_string();
            if t.ends_with(';') {
                assert_eq!(t, format!("typedef struct {name} {name};"), "odd typedef");
                items.push(Item::Opaque {
                    doc: std::mem::take(&mut doc),
                    name,
                });
                continue;
            }
            assert!(t.ends_with('{'), "odd struct typedef `{t}`");
            let struct_doc = std::mem::take(&mut doc);
            let mut fields = Vec::new();
            let mut field_doc = Vec::new();
            loop {
                let f = lines[i].trim();
                if f.starts_with("/**") {
                    field_doc = doc_block(&lines, &mut i);
                    continue;
                }
                i += 1;
                if f.starts_with('}') {
                    assert_eq!(f, format!("}} {name};"), "odd struct end");
                    break;
                }
                let decl = f
                    .strip_suffix(';')
                    .unwrap_or_else(|| panic!("odd field `{f}`"));
                let (ty, fname) = parse_decl(decl);
                fields.push(Field {
                    doc: std::mem::take(&mut field_doc),
                    name: fname,
                    ty: ty.expect("void field"),
                });
            }
            items.push(Item::Struct {
                doc: struct_doc,
                name,
                fields,
            });
            continue;
        }
        if let Some(rest) = t.strip_prefix("typedef ") {
            let (ty, name) = parse_decl(rest.strip_suffix(';').expect("odd typedef"));
            items.push(Item::Alias {
                doc: std::mem::take(&mut doc),
                name,
                target: ty.expect("void typedef"),
            });
            continue;
        }
        // A function prototype, up to `);`.
        let mut text = t.to_string();
        while !text.ends_with(");") {
            text.push(' ');
            text.push_str(lines[i].trim());
            i += 1;
        }
        let open = text.find('(').unwrap_or_else(|| panic!("odd line `{t}`"));
        let (ret, name) = parse_decl(&text[..open]);
        assert!(name.starts_with("mooncake_meta_"), "odd function `{name}`");
        let inner = &text[open + 1..text.len() - 2];
        assert!(
            !inner.contains('('),
            "function pointer parameters are not supported"
        );
        let params = if inner.trim() == "void" {
            Vec::new()
        } else {
            inner
                .split(',')
                .map(|p| {
                    let (ty, pname) = parse_decl(p.trim());
                    Field {
                        doc: Vec::new(),
                        name: pname,
                        ty: ty.expect("void parameter"),
                    }
                })
                .collect()
        };
        items.push(Item::Function {
            doc: std::mem::take(&mut doc),
            name,
            params,
            ret,
        });
    }
    items
}

/// The Rust type of a `#define` (see the module docs).
fn const_type(name: &str, value: &ConstValue) -> &'static str {
    match value {
        ConstValue::Str(_) => "&str",
        ConstValue::Int(v) if *v < 0 || name == "MOONCAKE_META_OK" => "mooncake_meta_status",
        ConstValue::Int(v) if *v > i64::from(u32::MAX) => "u64",
        _ => "u32",
    }
}

fn const_literal(value: &ConstValue) -> String {
    match value {
        ConstValue::Int(v) => v.to_string(),
        ConstValue::U32Max => "u32::MAX".to_string(),
        ConstValue::Str(s) => format!("{s:?}"),
    }
}

const KEYWORDS: &[&str] = &[
    "as", "async", "await", "box", "break", "const", "continue", "crate", "dyn", "else", "enum",
    "extern", "false", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod",
    "move", "mut", "pub", "ref", "return", "static", "struct", "super", "trait", "true", "try",
    "type", "unsafe", "use", "where", "while", "yield",
];

fn ident(name: &str) -> String {
    if KEYWORDS.contains(&name) {
        format!("r#{name}")
    } else {
        name.to_string()
    }
}

fn push_doc(out: &mut String, indent: &str, doc: &[String]) {
    for line in doc {
        if line.is_empty() {
            writeln!(out, "{indent}///").unwrap();
        } else {
            writeln!(out, "{indent}/// {line}").unwrap();
        }
    }
}

const BLESS: &str = "MOONCAKE_META_BLESS=1 cargo test -p mooncake-meta-sys --test bindings_sync";

/// `src/bindings.rs`: the header as Rust declarations.
pub fn render_bindings(items: &[Item]) -> String {
    let plain = Style { named: "", c: "" };
    let mut out = String::new();
    writeln!(
        out,
        "// @generated from include/mooncake_meta.h by rust-sys/tests/header_gen; do not edit."
    )
    .unwrap();
    writeln!(out, "// Regenerate with `{BLESS}`.").unwrap();
    out.push('\n');
    out.push_str("#[allow(unused_imports)]\nuse ::core::ffi::{c_char, c_int, c_void};\n");
    out.push_str("use ::core::marker::{PhantomData, PhantomPinned};\n");
    let mut functions = Vec::new();
    for item in items {
        match item {
            Item::Const { doc, name, value } => {
                out.push('\n');
                if doc.is_empty() && name.starts_with("MOONCAKE_META_VERSION_") {
                    // Written by the core's build.rs under a plain comment.
                    out.push_str("/// The library version the header was generated for.\n");
                }
                push_doc(&mut out, "", doc);
                writeln!(
                    out,
                    "pub const {name}: {} = {};",
                    const_type(name, value),
                    const_literal(value)
                )
                .unwrap();
            }
            Item::Opaque { doc, name } => {
                out.push('\n');
                push_doc(&mut out, "", doc);
                writeln!(out, "#[repr(C)]\npub struct {name} {{").unwrap();
                out.push_str("    _data: [u8; 0],\n");
                out.push_str("    _marker: PhantomData<(*mut u8, PhantomPinned)>,\n}\n");
            }
            Item::Alias { doc, name, target } => {
                out.push('\n');
                push_doc(&mut out, "", doc);
                writeln!(out, "pub type {name} = {};", target.render(plain)).unwrap();
            }
            Item::Struct { doc, name, fields } => {
                out.push('\n');
                push_doc(&mut out, "", doc);
                writeln!(
                    out,
                    "#[repr(C)]\n#[derive(Debug, Clone, Copy)]\npub struct {name} {{"
                )
                .unwrap();
                for f in fields {
                    push_doc(&mut out, "    ", &f.doc);
                    writeln!(out, "    pub {}: {},", ident(&f.name), f.ty.render(plain)).unwrap();
                }
                out.push_str("}\n\n");
                writeln!(out, "impl Default for {name} {{").unwrap();
                let sized = fields.first().is_some_and(|f| f.name == "struct_size");
                if sized {
                    out.push_str("    /// All zero (NULL pointers) but `struct_size`, which is this struct's size.\n");
                } else {
                    out.push_str("    /// All zero (NULL pointers).\n");
                }
                out.push_str("    fn default() -> Self {\n        Self {\n");
                for f in fields {
                    let value = if f.name == "struct_size" {
                        format!("::core::mem::size_of::<Self>() as {}", f.ty.render(plain))
                    } else {
                        f.ty.zero().to_string()
                    };
                    writeln!(out, "            {}: {value},", ident(&f.name)).unwrap();
                }
                out.push_str("        }\n    }\n}\n");
            }
            Item::Function { .. } => functions.push(item),
        }
    }
    out.push_str("\nextern \"C\" {\n");
    for (n, item) in functions.iter().enumerate() {
        let Item::Function {
            doc,
            name,
            params,
            ret,
        } = item
        else {
            unreachable!()
        };
        if n > 0 {
            out.push('\n');
        }
        push_doc(&mut out, "    ", doc);
        let params: Vec<String> = params
            .iter()
            .map(|p| format!("{}: {}", ident(&p.name), p.ty.render(plain)))
            .collect();
        let ret = ret
            .as_ref()
            .map(|t| format!(" -> {}", t.render(plain)))
            .unwrap_or_default();
        let one_line = format!("    pub fn {name}({}){ret};", params.join(", "));
        if one_line.len() <= 100 {
            writeln!(out, "{one_line}").unwrap();
        } else {
            // rustfmt's layout, for reading (the file itself is not formatted).
            writeln!(out, "    pub fn {name}(").unwrap();
            for p in &params {
                writeln!(out, "        {p},").unwrap();
            }
            writeln!(out, "    ){ret};").unwrap();
        }
    }
    out.push_str("}\n");
    out
}

/// Which module of the C-ABI crate's `src/` defines each `mooncake_meta_*` /
/// `MOONCAKE_META_*` item (functions, structs, constants, type aliases).
pub fn core_index(ffi_dir: &Path) -> BTreeMap<String, String> {
    let mut index = BTreeMap::new();
    let mut files: Vec<_> = std::fs::read_dir(ffi_dir)
        .unwrap_or_else(|e| panic!("{}: {e}", ffi_dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    files.sort();
    for path in files {
        let module = path.file_stem().unwrap().to_str().unwrap().to_string();
        if module == "lib" || module == "test_hooks" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for line in text.lines() {
            let t = line.trim_start();
            let name = if let Some(rest) = t.strip_prefix("pub unsafe extern \"C\" fn ") {
                rest
            } else if let Some(rest) = t.strip_prefix("pub extern \"C\" fn ") {
                rest
            } else if let Some(rest) = t
                .strip_prefix("pub struct ")
                .or_else(|| t.strip_prefix("pub const "))
                .or_else(|| t.strip_prefix("pub type "))
            {
                rest
            } else {
                continue;
            };
            let name: String = name
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if name.to_ascii_lowercase().starts_with("mooncake_meta_") {
                if let Some(old) = index.insert(name.clone(), module.clone()) {
                    panic!("{name} is defined in both src/{old}.rs and src/{module}.rs");
                }
            }
        }
    }
    index
}

/// `tests/abi_bundled.rs`: in `bundled` mode, every sys item against the
/// core's item of the same name.
pub fn render_abi_test(items: &[Item], index: &BTreeMap<String, String>) -> String {
    let sys = Style {
        named: "sys::",
        c: "::core::ffi::",
    };
    let core = Style {
        named: "core_ffi::",
        c: "::core::ffi::",
    };
    let module_of = |name: &str| -> &str {
        index
            .get(name)
            .unwrap_or_else(|| panic!("{name} is in the header but no src/ module defines it"))
    };
    let mut out = String::new();
    writeln!(
        out,
        "// @generated from include/mooncake_meta.h by rust-sys/tests/header_gen; do not edit."
    )
    .unwrap();
    writeln!(out, "// Regenerate with `{BLESS}`.").unwrap();
    out.push_str(
        "\n//! In `bundled` mode the core crate is in the graph, so each declaration of\n\
         //! the sys crate is checked against the core's item of the same name:\n\
         //! functions coerce to the same `unsafe extern \"C\" fn` type (and resolve to\n\
         //! the same symbol), structs have the same size, alignment, field offsets\n\
         //! and field types, constants the same type and value. A mismatch, or a\n\
         //! header item missing from either side, fails compilation.\n\n",
    );
    out.push_str("#![cfg(feature = \"bundled\")]\n\n");
    out.push_str("// Generated lines are long; rustfmt leaves them as they are.\n");
    out.push_str("#[rustfmt::skip]\nmod checks {\n");
    let header_len = out.len();
    out.push_str("#![allow(dead_code)]\n\n");
    out.push_str(
        "use mooncake_meta_sys as sys;\nuse std::mem::{align_of, offset_of, size_of};\n\n",
    );
    out.push_str("/// The core's item for every header name, from the `src/` module that defines it.\nmod core_ffi {\n");
    for item in items {
        if matches!(item, Item::Const { name, .. } if name.starts_with("MOONCAKE_META_VERSION_")) {
            continue; // written by the core's build.rs, not Rust items
        }
        let name = item.name();
        writeln!(
            out,
            "    pub use mooncake_meta::{}::{name};",
            module_of(name)
        )
        .unwrap();
    }
    out.push_str("}\n");

    out.push_str("\n// Constants: `==` needs the same type on both sides.\n");
    for item in items {
        if let Item::Const { name, value, .. } = item {
            if name.starts_with("MOONCAKE_META_VERSION_") {
                continue;
            }
            let _ = value;
            writeln!(
                out,
                "const _: () = assert!(sys::{name} == core_ffi::{name});"
            )
            .unwrap();
        }
    }

    out.push_str("\n// Type aliases: the same type.\n");
    for item in items {
        if let Item::Alias { name, target, .. } = item {
            writeln!(
                out,
                "fn alias_{name}(s: sys::{name}, c: core_ffi::{name}) -> ({t}, {t}) {{\n    (s, c)\n}}",
                t = target.render(sys)
            )
            .unwrap();
        }
    }

    for item in items {
        if let Item::Struct { name, fields, .. } = item {
            writeln!(out, "\n// struct {name}").unwrap();
            writeln!(
                out,
                "const _: () = assert!(size_of::<sys::{name}>() == size_of::<core_ffi::{name}>());"
            )
            .unwrap();
            writeln!(out, "const _: () = assert!(align_of::<sys::{name}>() == align_of::<core_ffi::{name}>());").unwrap();
            for f in fields {
                let fname = ident(&f.name);
                writeln!(
                    out,
                    "const _: () = assert!(offset_of!(sys::{name}, {fname}) == offset_of!(core_ffi::{name}, {fname}));"
                )
                .unwrap();
            }
            writeln!(
                out,
                "fn fields_of_{name}(s: &sys::{name}, c: &core_ffi::{name}) {{"
            )
            .unwrap();
            for f in fields {
                let fname = ident(&f.name);
                writeln!(out, "    let _: &{} = &s.{fname};", f.ty.render(sys)).unwrap();
                writeln!(out, "    let _: &{} = &c.{fname};", f.ty.render(core)).unwrap();
            }
            out.push_str("}\n");
        }
    }

    let mut count = 0;
    out.push_str(
        "\n/// Each declaration and the core's function have the header's type and are one symbol.\n\
         #[test]\nfn every_declaration_has_the_core_signature() {\n",
    );
    for item in items {
        if let Item::Function {
            name, params, ret, ..
        } = item
        {
            count += 1;
            let ty = |style: Style| {
                let params: Vec<String> = params.iter().map(|p| p.ty.render(style)).collect();
                let ret = ret
                    .as_ref()
                    .map(|t| format!(" -> {}", t.render(style)))
                    .unwrap_or_default();
                format!("unsafe extern \"C\" fn({}){ret}", params.join(", "))
            };
            writeln!(out, "    let s: {} = sys::{name};", ty(sys)).unwrap();
            writeln!(out, "    let c: {} = core_ffi::{name};", ty(core)).unwrap();
            writeln!(out, "    assert_eq!(s as usize, c as usize, \"{name}\");").unwrap();
        }
    }
    writeln!(out, "    // {count} functions").unwrap();
    out.push_str("}\n");
    let body = out.split_off(header_len);
    for line in body.lines() {
        if !line.is_empty() {
            out.push_str("    ");
        }
        out.push_str(line);
        out.push('\n');
    }
    out.push_str("}\n");
    out
}
