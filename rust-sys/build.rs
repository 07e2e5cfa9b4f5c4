//! Links libmooncake_meta.
//!
//! - Directory: `MOONCAKE_META_LIB_DIR` (relative paths are taken from this
//!   crate's directory), else the repository's release output
//!   (`../target/release`, what `make build` / `cargo build --release` at
//!   the repository root produce).
//! - Kind: the shared library, with an rpath to its directory for this
//!   crate's tests and examples; the static archive with the `static`
//!   feature or `MOONCAKE_META_STATIC=1`.
//! - Feature `bundled`: nothing to link; the core crate is compiled into the
//!   graph as a dependency.
//!
//! - SONAME: on ELF the library is loaded as `libmooncake_meta.so.<ABI>`;
//!   when that symlink is missing next to it (a plain `cargo build
//!   --release`; `make build` creates it) one in OUT_DIR, also on the rpath,
//!   stands in.
//!
//! A missing library is a `cargo:warning` naming the build command, not an
//! error: only linking fails, so `cargo check`/`clippy`/`doc` work on a
//! clean checkout.
//!
//! Dependents (`links = "mooncake_meta"`) get `DEP_MOONCAKE_META_INCLUDE`
//! (the header's directory), when linking `DEP_MOONCAKE_META_LIB_DIR`, and,
//! when linking the shared library on ELF/Mach-O, `DEP_MOONCAKE_META_RPATH`:
//! the directories (a `PATH`-style list) a binary needs on its rpath to
//! load the library. Cargo passes this crate's own `-Wl,-rpath` only to its
//! own tests and examples, so a dependent that builds a binary emits
//! `cargo:rustc-link-arg=-Wl,-rpath,<dir>` for each (see README.md).

use std::env;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=MOONCAKE_META_LIB_DIR");
    println!("cargo:rerun-if-env-changed=MOONCAKE_META_STATIC");

    let crate_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let repo = crate_dir.join("..");
    println!("cargo:include={}", repo.join("include").display());

    if env::var_os("CARGO_FEATURE_BUNDLED").is_some() {
        return;
    }

    let dir = match env::var_os("MOONCAKE_META_LIB_DIR") {
        Some(d) if !d.is_empty() => crate_dir.join(d), // join keeps an absolute path as is
        _ => repo.join("target").join("release"),
    };
    let dir = dir.canonicalize().unwrap_or(dir);
    let is_static = env::var_os("CARGO_FEATURE_STATIC").is_some()
        || env::var("MOONCAKE_META_STATIC").is_ok_and(|v| v == "1");
    let os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let file = match (is_static, os.as_str()) {
        (true, "windows") => "mooncake_meta.lib",
        (true, _) => "libmooncake_meta.a",
        (false, "windows") => "mooncake_meta.dll.lib",
        (false, "macos" | "ios") => "libmooncake_meta.dylib",
        (false, _) => "libmooncake_meta.so",
    };
    let lib = dir.join(file);
    // Relink (static) or re-check (missing) when the library changes.
    println!("cargo:rerun-if-changed={}", lib.display());
    if !lib.exists() {
        println!(
            "cargo:warning={} not found: build it with `make build` (or `cargo build --release`) \
             at the repository root, or set MOONCAKE_META_LIB_DIR to its directory; \
             linking fails until then",
            lib.display()
        );
    }

    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:lib_dir={}", dir.display());
    if is_static {
        // The archive's own system dependencies (pthread, dl, m) are the
        // Rust standard library's, which every Rust program links already.
        println!("cargo:rustc-link-lib=static=mooncake_meta");
    } else {
        println!("cargo:rustc-link-lib=dylib=mooncake_meta");
        if os != "windows" {
            // For this crate's tests and examples; a dependent sets its own
            // from DEP_MOONCAKE_META_RPATH (or uses LD_LIBRARY_PATH, or a
            // library directory the dynamic loader already searches).
            let mut rpath = vec![dir.clone()];
            rpath.extend(soname_link(&repo, &dir, &lib, &os));
            for d in &rpath {
                println!("cargo:rustc-link-arg=-Wl,-rpath,{}", d.display());
            }
            if !matches!(os.as_str(), "macos" | "ios") {
                // DT_RPATH, not DT_RUNPATH: cargo runs tests with its own
                // LD_LIBRARY_PATH (which can hold another build of the
                // library, e.g. target/release), and only DT_RPATH is
                // searched before it, so a test links and loads the same
                // library.
                println!("cargo:rustc-link-arg=-Wl,--disable-new-dtags");
            }
            // Link arguments do not reach dependents: their build scripts
            // read this as DEP_MOONCAKE_META_RPATH (a search-path list) and
            // pass the same `-Wl,-rpath` for their binaries.
            if let Ok(list) = env::join_paths(&rpath) {
                println!("cargo:rpath={}", list.to_string_lossy());
            }
        }
    }
}

/// On ELF targets the shared library's SONAME is `libmooncake_meta.so.<ABI
/// major>`, the file a linked program looks for at run time. `make build`
/// puts that symlink next to the library; a plain `cargo build --release`
/// does not, so then a symlink in OUT_DIR (returned, for the rpath) stands
/// in for it. The major is the header's `MOONCAKE_META_ABI_VERSION`, which
/// the C ABI crate's build.rs (the repository's root) also writes into the
/// SONAME.
fn soname_link(repo: &Path, dir: &Path, lib: &Path, os: &str) -> Option<PathBuf> {
    if matches!(os, "macos" | "ios" | "windows") || !lib.exists() {
        return None;
    }
    let header = repo.join("include").join("mooncake_meta.h");
    println!("cargo:rerun-if-changed={}", header.display());
    let abi = std::fs::read_to_string(&header)
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("#define MOONCAKE_META_ABI_VERSION "))?
        .trim()
        .parse::<u32>()
        .ok()?;
    let soname = format!("libmooncake_meta.so.{abi}");
    if dir.join(&soname).exists() {
        return None;
    }
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));
    let link = out.join(&soname);
    let _ = std::fs::remove_file(&link);
    #[cfg(unix)]
    std::os::unix::fs::symlink(lib, &link).ok()?;
    #[cfg(not(unix))]
    std::fs::copy(lib, &link).ok()?;
    Some(out)
}
