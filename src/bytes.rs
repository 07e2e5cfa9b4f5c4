//! Bytes going back to C, two ways: a library-owned `mooncake_meta_bytes`
//! buffer (read with `_data`/`_len`, released with `_free`), or a copy into
//! the caller's `(buf, cap)` with the BUFFER_TOO_SMALL convention: too small
//! → `*out_len` = the length needed and nothing else written.

use super::boundary;
use super::input::{self, Out};
use mooncake_meta_core::error::{Error, ErrorKind, Result};
use std::fmt::Display;

/// A byte buffer owned by the library (a snapshot, Prometheus text).
/// Opaque: read it with `mooncake_meta_bytes_data` and
/// `mooncake_meta_bytes_len`, release it with `mooncake_meta_bytes_free`.
/// The data is followed by a NUL byte that `_len` does not count, so text
/// can be used as a C string directly. Immutable: any number of threads may
/// read one at once.
pub struct mooncake_meta_bytes {
    /// The content plus the trailing NUL.
    data: Box<[u8]>,
}

impl mooncake_meta_bytes {
    /// A heap buffer for the caller, holding `content` and a trailing NUL.
    pub(crate) fn into_raw(mut content: Vec<u8>) -> *mut mooncake_meta_bytes {
        content.push(0);
        Box::into_raw(Box::new(mooncake_meta_bytes {
            data: content.into_boxed_slice(),
        }))
    }

    fn content(&self) -> &[u8] {
        &self.data[..self.data.len() - 1]
    }
}

/// Hands `content` to the caller as a new `mooncake_meta_bytes` through
/// `out`, which was checked before the work was done.
pub(crate) fn give(out: Out<'_, *mut mooncake_meta_bytes>, content: Vec<u8>) {
    out.write(mooncake_meta_bytes::into_raw(content));
}

/// The caller-buffer convention. `out_len` must not be NULL; `buf` may be
/// NULL only with `cap == 0` (a length query). If `content` fits, it is
/// copied to `buf` and `*out_len` = its length; otherwise the result is
/// `BUFFER_TOO_SMALL`, `*out_len` = the length needed and `buf` untouched.
///
/// # Safety
/// A non-NULL `buf` must be valid for writing `cap` bytes; a non-NULL
/// `out_len` for writing one `size_t`.
pub(crate) unsafe fn copy_out(
    content: &[u8],
    buf: *mut u8,
    cap: usize,
    out_len: *mut usize,
    buf_arg: impl Display + Copy,
) -> Result<()> {
    check_buffer_args(buf, cap, out_len, buf_arg)?;
    // SAFETY: forwarded.
    let out_len = unsafe { Out::new(out_len, "out_len") }?;
    if content.len() > cap {
        out_len.write(content.len());
        return Err(Error::new(
            ErrorKind::BufferTooSmall,
            format!(
                "{buf_arg}: capacity {cap} is below the {} bytes needed (*out_len is set to that)",
                content.len()
            ),
        ));
    }
    if !content.is_empty() {
        // SAFETY: cap >= content.len() > 0, so buf is non-NULL (checked
        // above) and valid for the copy; the caller's buffer cannot overlap
        // a value the library owns.
        unsafe { std::ptr::copy_nonoverlapping(content.as_ptr(), buf, content.len()) };
    }
    out_len.write(content.len());
    Ok(())
}

/// Checks the arguments of the caller-buffer convention before any work,
/// so a call that would fail for a NULL pointer has no side effect:
/// `out_len` must not be NULL, `buf` not NULL unless `cap == 0`, and `cap`
/// at most `PTRDIFF_MAX` (no buffer is larger: a larger capacity is a
/// caller's bug, `INVALID_PARAMS` as for every C array, docs/CONTRACT.md
/// section 9).
pub(crate) fn check_buffer_args(
    buf: *mut u8,
    cap: usize,
    out_len: *const usize,
    buf_arg: impl Display,
) -> Result<()> {
    if out_len.is_null() {
        return Err(input::null("out_len"));
    }
    if buf.is_null() && cap > 0 {
        return Err(Error::new(
            ErrorKind::NullArgument,
            format!("{buf_arg} is NULL but its capacity is {cap}"),
        ));
    }
    if cap > isize::MAX as usize {
        return Err(Error::invalid(format!(
            "{buf_arg}: capacity {cap} is larger than any buffer (PTRDIFF_MAX {})",
            isize::MAX
        )));
    }
    Ok(())
}

/// The first byte of the buffer's content, valid for
/// `mooncake_meta_bytes_len(b)` bytes and followed by a NUL byte. NULL if
/// `b` is NULL.
///
/// Ownership: the memory belongs to `b` and is valid until
/// `mooncake_meta_bytes_free(b)`; do not free it separately.
/// Thread safety: a buffer is immutable; any number of threads may read it
/// at once, but not while another frees it.
///
/// # Safety
/// `b` must be NULL or a buffer from this library not yet freed.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_bytes_data(b: *const mooncake_meta_bytes) -> *const u8 {
    boundary::guard(std::ptr::null(), || {
        // SAFETY: the caller passes NULL or a live buffer.
        match unsafe { b.as_ref() } {
            Some(b) => b.data.as_ptr(),
            None => std::ptr::null(),
        }
    })
}

/// The length of the buffer's content in bytes (the trailing NUL not
/// counted); 0 if `b` is NULL.
///
/// Ownership: nothing is transferred.
/// Thread safety: as `mooncake_meta_bytes_data`.
///
/// # Safety
/// `b` must be NULL or a buffer from this library not yet freed.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_bytes_len(b: *const mooncake_meta_bytes) -> usize {
    boundary::guard(0, || {
        // SAFETY: the caller passes NULL or a live buffer.
        unsafe { b.as_ref() }.map_or(0, |b| b.content().len())
    })
}

/// Releases a buffer. `mooncake_meta_bytes_free(NULL)` does nothing.
///
/// Ownership: takes ownership of `b`; it and its data are invalid
/// afterwards.
/// Thread safety: no other thread may use `b` concurrently.
///
/// # Safety
/// `b` must be NULL or a buffer from this library not yet freed.
#[no_mangle]
pub unsafe extern "C" fn mooncake_meta_bytes_free(b: *mut mooncake_meta_bytes) {
    boundary::guard((), || {
        if !b.is_null() {
            // SAFETY: a non-NULL b came from `into_raw` (Box) and is freed once.
            drop(unsafe { Box::from_raw(b) });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ptr;

    #[test]
    fn bytes_hold_content_and_a_trailing_nul() {
        let b = mooncake_meta_bytes::into_raw(b"abc".to_vec());
        unsafe {
            assert_eq!(mooncake_meta_bytes_len(b), 3);
            let data = std::slice::from_raw_parts(mooncake_meta_bytes_data(b), 4);
            assert_eq!(data, b"abc\0");
            mooncake_meta_bytes_free(b);
        }
    }

    #[test]
    fn empty_bytes_have_a_valid_pointer_and_null_is_harmless() {
        let b = mooncake_meta_bytes::into_raw(Vec::new());
        unsafe {
            assert_eq!(mooncake_meta_bytes_len(b), 0);
            assert_eq!(*mooncake_meta_bytes_data(b), 0);
            mooncake_meta_bytes_free(b);
            assert_eq!(mooncake_meta_bytes_len(ptr::null()), 0);
            assert!(mooncake_meta_bytes_data(ptr::null()).is_null());
            mooncake_meta_bytes_free(ptr::null_mut());
        }
    }

    // BUFFER_TOO_SMALL convention: required length reported, buffer untouched.
    #[test]
    fn too_small_buffer_reports_the_length_needed_and_writes_nothing() {
        let mut buf = [0xaau8; 4];
        let mut len = 99usize;
        let e = unsafe { copy_out(b"hello", buf.as_mut_ptr(), 4, &mut len, "buf") }.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BufferTooSmall);
        assert_eq!(len, 5);
        assert_eq!(buf, [0xaa; 4]);
        // (NULL, 0) is the length query.
        let e = unsafe { copy_out(b"hello", ptr::null_mut(), 0, &mut len, "buf") }.unwrap_err();
        assert_eq!((e.kind(), len), (ErrorKind::BufferTooSmall, 5));
    }

    #[test]
    fn fitting_content_is_copied_and_its_length_reported() {
        let mut buf = [0u8; 8];
        let mut len = 0usize;
        unsafe { copy_out(b"hello", buf.as_mut_ptr(), 8, &mut len, "buf") }.unwrap();
        assert_eq!((&buf[..5], len), (&b"hello"[..], 5));
        unsafe { copy_out(b"", ptr::null_mut(), 0, &mut len, "buf") }.unwrap();
        assert_eq!(len, 0);
    }

    #[test]
    fn buffer_arguments_are_checked_up_front() {
        let len = 0usize;
        assert_eq!(
            check_buffer_args(ptr::null_mut(), 3, &len, "buf")
                .unwrap_err()
                .kind(),
            ErrorKind::NullArgument
        );
        assert_eq!(
            check_buffer_args([0u8].as_mut_ptr(), 1, ptr::null(), "buf")
                .unwrap_err()
                .kind(),
            ErrorKind::NullArgument
        );
        check_buffer_args(ptr::null_mut(), 0, &len, "buf").unwrap();
        // No buffer is larger than PTRDIFF_MAX: a larger capacity is refused
        // before anything is read or written.
        let mut one = [0u8];
        let e =
            check_buffer_args(one.as_mut_ptr(), isize::MAX as usize + 1, &len, "buf").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidParams);
        assert!(e.message().contains("capacity"), "{}", e.message());
        check_buffer_args(one.as_mut_ptr(), isize::MAX as usize, &len, "buf").unwrap();
    }
}
