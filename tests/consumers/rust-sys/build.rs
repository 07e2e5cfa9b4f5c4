//! The sys crate links libmooncake_meta; this binary also has to find the
//! shared library when it runs. The sys crate says where
//! (`DEP_MOONCAKE_META_RPATH`, a search-path list): put it on the rpath.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_MOONCAKE_META_RPATH");
    if let Some(dirs) = std::env::var_os("DEP_MOONCAKE_META_RPATH") {
        for dir in std::env::split_paths(&dirs) {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
        }
    }
}
