//! Version queries. The header also carries `MOONCAKE_META_VERSION_*`
//! defines (written by build.rs from Cargo.toml), so a program can compare
//! the library it runs against with the header it was compiled with.

use super::boundary;
use std::os::raw::c_char;

/// The ABI major version. It changes only when a released function, type or
/// constant changes incompatibly; additions (new functions, fields appended
/// to size-versioned structs, new flag bits) keep it.
pub const MOONCAKE_META_ABI_VERSION: u32 = 1;

const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");

/// The library version, `"MAJOR.MINOR.PATCH"` (equal to
/// `MOONCAKE_META_VERSION_STRING` of the header it was built with).
///
/// Ownership: the returned string is static; never free it.
/// Thread safety: may be called from any thread at any time.
#[no_mangle]
pub extern "C" fn mooncake_meta_version() -> *const c_char {
    boundary::guard(VERSION.as_ptr().cast(), || VERSION.as_ptr().cast())
}

/// The ABI major version of the running library (equal to
/// `MOONCAKE_META_ABI_VERSION` of the header it was built with). A program
/// should refuse to run if this differs from its compile-time value.
///
/// Ownership: nothing to own.
/// Thread safety: may be called from any thread at any time.
#[no_mangle]
pub extern "C" fn mooncake_meta_abi_version() -> u32 {
    boundary::guard(MOONCAKE_META_ABI_VERSION, || MOONCAKE_META_ABI_VERSION)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn version_is_the_crate_version() {
        let v = unsafe { CStr::from_ptr(mooncake_meta_version()) };
        assert_eq!(v.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
        assert_eq!(mooncake_meta_abi_version(), 1);
    }
}
