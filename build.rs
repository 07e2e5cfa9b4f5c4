//! Generates the C header `mooncake_meta.h` into OUT_DIR with the pinned
//! cbindgen, from `src/` (the C-ABI crate) only, and tells the crate where it is
//! (`MOONCAKE_META_GENERATED_HEADER`, used by tests/header.rs). A header that
//! cannot be generated is a broken build: this fails loudly.

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=build.rs");

    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("set by cargo"));

    let mut config = cbindgen::Config::from_file(manifest_dir.join("cbindgen.toml"))
        .unwrap_or_else(|e| panic!("cbindgen.toml: {e}"));
    config.after_includes = Some(version_defines());

    let header = out_dir.join("mooncake_meta.h");
    cbindgen::Builder::new()
        .with_config(config)
        // Only this crate's module tree: the core crate never reaches the header.
        .with_src(manifest_dir.join("src/lib.rs"))
        .generate()
        .unwrap_or_else(|e| panic!("cbindgen could not generate mooncake_meta.h from src/: {e}"))
        .write_to_file(&header);

    println!(
        "cargo:rustc-env=MOONCAKE_META_GENERATED_HEADER={}",
        header.display()
    );

    set_soname(&manifest_dir);
}

/// Gives the shared library the SONAME `libmooncake_meta.so.<ABI major>`, so
/// programs linked against it keep loading any later release with the same
/// ABI and refuse one without (`make install` adds the matching symlinks).
/// The major comes from `MOONCAKE_META_ABI_VERSION` in src/version.rs,
/// the one place it is defined. ELF targets only; macOS uses install names.
fn set_soname(manifest_dir: &std::path::Path) {
    let os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let family = env::var("CARGO_CFG_TARGET_FAMILY").unwrap_or_default();
    if family != "unix" || matches!(os.as_str(), "macos" | "ios" | "tvos" | "watchos") {
        return;
    }
    let version_rs = manifest_dir.join("src/version.rs");
    let source = std::fs::read_to_string(&version_rs)
        .unwrap_or_else(|e| panic!("{}: {e}", version_rs.display()));
    let abi = source
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("pub const MOONCAKE_META_ABI_VERSION: u32 = ")?
                .strip_suffix(';')?
                .parse::<u32>()
                .ok()
        })
        .unwrap_or_else(|| {
            panic!(
                "{}: no `pub const MOONCAKE_META_ABI_VERSION: u32 = N;` line to take the SONAME from",
                version_rs.display()
            )
        });
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmooncake_meta.so.{abi}");
}

/// Library version defines from Cargo.toml (cargo reruns this script when
/// the package version changes, since it is part of the build's identity).
fn version_defines() -> String {
    let var = |name: &str| env::var(name).unwrap_or_else(|_| panic!("{name} is set by cargo"));
    format!(
        "\n/* The library version this header was generated for. */\n\
         #define MOONCAKE_META_VERSION_MAJOR {}\n\
         #define MOONCAKE_META_VERSION_MINOR {}\n\
         #define MOONCAKE_META_VERSION_PATCH {}\n\
         #define MOONCAKE_META_VERSION_STRING \"{}\"\n",
        var("CARGO_PKG_VERSION_MAJOR"),
        var("CARGO_PKG_VERSION_MINOR"),
        var("CARGO_PKG_VERSION_PATCH"),
        var("CARGO_PKG_VERSION"),
    )
}
