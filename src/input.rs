//! Reading what C hands in, and writing what goes back. Every check names
//! the argument: `(ptr, len)` byte strings (`(NULL, 0)` is empty),
//! NUL-terminated strings, arrays of strings, 0/1 integers, and [`Out`]
//! pointers that are checked up front but written only on success.
//! Argument names are `impl Display` ([`Field`], [`Index`]) so a name like
//! `cfg.preferred_segments[2]` is only built when an error needs it.

use mooncake_meta_core::error::{Error, ErrorKind, Result};
use std::ffi::CStr;
use std::fmt::{self, Display};
use std::marker::PhantomData;
use std::os::raw::{c_char, c_int};
use std::ptr::NonNull;

/// The name of a field of an argument: `cfg.group`.
#[derive(Clone, Copy)]
pub(crate) struct Field<A>(pub A, pub &'static str);

impl<A: Display> Display for Field<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.0, self.1)
    }
}

/// The name of an element of an array argument: `segs[2]`.
#[derive(Clone, Copy)]
pub(crate) struct Index<A>(pub A, pub usize);

impl<A: Display> Display for Index<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}]", self.0, self.1)
    }
}

/// `NULL_ARGUMENT` naming `arg`.
pub(crate) fn null(arg: impl Display) -> Error {
    Error::new(ErrorKind::NullArgument, format!("{arg} is NULL"))
}

fn not_utf8(arg: impl Display, e: std::str::Utf8Error) -> Error {
    Error::new(
        ErrorKind::InvalidUtf8,
        format!(
            "{arg} is not valid UTF-8 (bad byte at offset {})",
            e.valid_up_to()
        ),
    )
}

/// `len` bytes at `ptr`. `(NULL, 0)` is the empty slice; `(NULL, n > 0)` is
/// `NULL_ARGUMENT`.
///
/// # Safety
/// A non-NULL `ptr` must be valid for reading `len` bytes for `'a`.
pub(crate) unsafe fn bytes<'a>(
    ptr: *const c_char,
    len: usize,
    arg: impl Display,
) -> Result<&'a [u8]> {
    if ptr.is_null() {
        return if len == 0 {
            Ok(&[])
        } else {
            Err(Error::new(
                ErrorKind::NullArgument,
                format!("{arg} is NULL but its length is {len}"),
            ))
        };
    }
    if len > isize::MAX as usize {
        return Err(Error::invalid(format!("{arg}: length {len} is too large")));
    }
    // SAFETY: non-NULL, length bounded, validity promised by the caller.
    Ok(unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) })
}

/// A UTF-8 string given as `(ptr, len)`; see [`bytes`].
///
/// # Safety
/// As [`bytes`].
pub(crate) unsafe fn string<'a>(
    ptr: *const c_char,
    len: usize,
    arg: impl Display + Copy,
) -> Result<&'a str> {
    // SAFETY: forwarded.
    let b = unsafe { bytes(ptr, len, arg)? };
    std::str::from_utf8(b).map_err(|e| not_utf8(arg, e))
}

/// A NUL-terminated UTF-8 string; NULL is `NULL_ARGUMENT`.
///
/// # Safety
/// A non-NULL `ptr` must point to a NUL-terminated string valid for `'a`.
pub(crate) unsafe fn c_str<'a>(ptr: *const c_char, arg: impl Display + Copy) -> Result<&'a str> {
    // SAFETY: forwarded.
    unsafe { opt_c_str(ptr, arg) }?.ok_or_else(|| null(arg))
}

/// A NUL-terminated UTF-8 string where NULL means "none".
///
/// # Safety
/// As [`c_str`].
pub(crate) unsafe fn opt_c_str<'a>(
    ptr: *const c_char,
    arg: impl Display,
) -> Result<Option<&'a str>> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: non-NULL and NUL-terminated per the caller.
    let s = unsafe { CStr::from_ptr(ptr) };
    s.to_str().map(Some).map_err(|e| not_utf8(arg, e))
}

/// `count` NUL-terminated strings. `(NULL, 0)` is empty; a NULL array with a
/// non-zero count, or a NULL element, is `NULL_ARGUMENT` naming `arg[i]`.
///
/// # Safety
/// A non-NULL `ptr` must be valid for reading `count` pointers, each NULL or
/// a NUL-terminated string valid for `'a`.
pub(crate) unsafe fn c_str_array<'a>(
    ptr: *const *const c_char,
    count: usize,
    arg: impl Display + Copy,
) -> Result<Vec<&'a str>> {
    if ptr.is_null() {
        return if count == 0 {
            Ok(Vec::new())
        } else {
            Err(Error::new(
                ErrorKind::NullArgument,
                format!("{arg} is NULL but its count is {count}"),
            ))
        };
    }
    if count > isize::MAX as usize / std::mem::size_of::<*const c_char>() {
        return Err(Error::invalid(format!("{arg}: count {count} is too large")));
    }
    // SAFETY: non-NULL, count bounded, validity promised by the caller.
    let items = unsafe { std::slice::from_raw_parts(ptr, count) };
    items
        .iter()
        .enumerate()
        // SAFETY: each element is NULL or a valid C string per the caller.
        .map(|(i, &p)| unsafe { c_str(p, Index(arg, i)) })
        .collect()
}

/// A C boolean that must be exactly 0 or 1.
pub(crate) fn bool01(v: c_int, arg: impl Display) -> Result<bool> {
    match v {
        0 => Ok(false),
        1 => Ok(true),
        other => Err(Error::invalid(format!("{arg} must be 0 or 1, got {other}"))),
    }
}

/// An out-pointer, checked for NULL before the call does anything and
/// written only by [`Out::write`], the last step of a successful call.
pub(crate) struct Out<'a, T> {
    ptr: NonNull<T>,
    _borrow: PhantomData<&'a mut T>,
}

impl<T> Out<'_, T> {
    /// # Safety
    /// A non-NULL `ptr` must be valid for writing one `T` for the call.
    pub(crate) unsafe fn new(ptr: *mut T, arg: impl Display) -> Result<Self> {
        let ptr = NonNull::new(ptr).ok_or_else(|| null(arg))?;
        Ok(Out {
            ptr,
            _borrow: PhantomData,
        })
    }

    /// Stores `value` without reading or dropping what was there.
    pub(crate) fn write(self, value: T) {
        // SAFETY: validity promised at construction.
        unsafe { self.ptr.as_ptr().write(value) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ptr;

    fn kind<T>(r: Result<T>) -> ErrorKind {
        r.err().expect("expected an error").kind()
    }

    #[test]
    fn null_with_zero_length_is_empty() {
        unsafe {
            assert_eq!(bytes(ptr::null(), 0, "k").unwrap(), b"");
            assert_eq!(string(ptr::null(), 0, "k").unwrap(), "");
            assert!(c_str_array(ptr::null(), 0, "a").unwrap().is_empty());
        }
    }

    #[test]
    fn null_with_length_is_a_null_argument_naming_it() {
        let e = unsafe { string(ptr::null(), 3, "key") }.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NullArgument);
        assert_eq!(e.message(), "key is NULL but its length is 3");
        assert_eq!(
            kind(unsafe { c_str_array(ptr::null(), 1, "segs") }),
            ErrorKind::NullArgument
        );
        assert_eq!(
            kind(unsafe { c_str(ptr::null(), "name") }),
            ErrorKind::NullArgument
        );
    }

    #[test]
    fn bad_utf8_is_invalid_utf8_naming_the_argument() {
        let bad = b"ab\xffc";
        let e = unsafe { string(bad.as_ptr().cast(), bad.len(), "key") }.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidUtf8);
        assert_eq!(e.message(), "key is not valid UTF-8 (bad byte at offset 2)");
    }

    #[test]
    fn length_is_respected_without_nul() {
        let s = b"hello";
        assert_eq!(
            unsafe { string(s.as_ptr().cast(), 4, "k") }.unwrap(),
            "hell"
        );
    }

    #[test]
    fn string_arrays_name_the_bad_element() {
        let a = c"a";
        let bad = b"\xfe\0";
        let items = [a.as_ptr(), ptr::null(), bad.as_ptr().cast()];
        let got = unsafe { c_str_array(items.as_ptr(), 1, "segs") }.unwrap();
        assert_eq!(got, ["a"]);
        let e = unsafe { c_str_array(items.as_ptr(), 2, "segs") }.unwrap_err();
        assert_eq!(
            (e.kind(), e.message()),
            (ErrorKind::NullArgument, "segs[1] is NULL")
        );
        let swapped = [a.as_ptr(), bad.as_ptr().cast()];
        let e = unsafe { c_str_array(swapped.as_ptr(), 2, "segs") }.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidUtf8);
        assert!(e.message().starts_with("segs[1] "), "{}", e.message());
    }

    #[test]
    fn bool01_rejects_other_values() {
        assert!(!bool01(0, "b").unwrap());
        assert!(bool01(1, "b").unwrap());
        let e = bool01(2, "allow").unwrap_err();
        assert_eq!(
            (e.kind(), e.message()),
            (ErrorKind::InvalidParams, "allow must be 0 or 1, got 2")
        );
    }

    #[test]
    fn out_rejects_null_and_writes_once() {
        assert_eq!(
            kind(unsafe { Out::<u64>::new(ptr::null_mut(), "out") }),
            ErrorKind::NullArgument
        );
        let mut v = 0u64;
        let out = unsafe { Out::new(&mut v, "out") }.unwrap();
        out.write(9);
        assert_eq!(v, 9);
    }
}
