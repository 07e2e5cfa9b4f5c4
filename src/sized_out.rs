//! Size-versioned output structs (statistics, reports, metrics): the caller
//! sets the first field, `uint32_t struct_size`, to `sizeof` its struct; the
//! library checks it before doing anything and, on success, writes
//! `min(struct_size, sizeof ours)` bytes with `struct_size` set to that
//! number, so a caller built against a newer header sees which of its fields
//! this library filled. Fields are only ever appended. A size that is no
//! version's `sizeof` (below the first's, above [`MAX_STRUCT_SIZE`], or not
//! a multiple of the struct's alignment) is refused: [`check_size`].

use super::input::null;
use mooncake_meta_core::error::{Error, ErrorKind, Result};
use std::fmt::Display;
use std::mem::size_of;
use std::ptr::NonNull;

/// A `#[repr(C)]` output struct whose first field is `struct_size: u32`.
///
/// # Safety
/// Implementors must be `#[repr(C)]`, start with a `u32` at offset 0, and
/// hold only plain integers (any bytes copied out are meaningful).
pub(crate) unsafe trait SizeVersioned: Sized {
    /// Bytes of the first released layout: the smallest size accepted. Frozen.
    const V1_SIZE: usize;
}

/// Larger sizes are taken for an uninitialised field, not a future version.
pub(crate) const MAX_STRUCT_SIZE: usize = 4096;

/// Checks a caller's `struct_size` for an output struct `T` whose first
/// version is `v1` bytes: at least `v1`, at most [`MAX_STRUCT_SIZE`], and
/// a multiple of `T`'s alignment, as the `sizeof` of every version of it
/// is (a size between two fields' ends would have the library write part
/// of a field: `STRUCT_SIZE_UNSUPPORTED`, as a size no version has). A
/// size above ours is a newer header's: the library fills its own fields.
pub(crate) fn check_size<T>(size: usize, v1: usize, field: impl Display) -> Result<()> {
    let align = std::mem::align_of::<T>();
    if size < v1 {
        return Err(Error::new(
            ErrorKind::StructSizeUnsupported,
            format!(
                "{field} {size} is below the smallest supported size {v1} \
                 (set it to sizeof the struct)"
            ),
        ));
    }
    if size > MAX_STRUCT_SIZE {
        return Err(Error::new(
            ErrorKind::StructSizeUnsupported,
            format!("{field} {size} exceeds {MAX_STRUCT_SIZE}: not a sizeof (uninitialised?)"),
        ));
    }
    if size % align != 0 {
        return Err(Error::new(
            ErrorKind::StructSizeUnsupported,
            format!(
                "{field} {size} is not a multiple of the struct's alignment {align}, so no \
                 version's sizeof (set it to sizeof the struct)"
            ),
        ));
    }
    Ok(())
}

/// A checked pointer to a caller's size-versioned output struct, written
/// only by [`SizedOut::write`], the last step of a successful call.
pub(crate) struct SizedOut<T> {
    ptr: NonNull<T>,
    size: usize,
}

impl<T: SizeVersioned> SizedOut<T> {
    /// A required output. NULL → `NULL_ARGUMENT`; a `struct_size`
    /// [`check_size`] refuses → `STRUCT_SIZE_UNSUPPORTED`.
    ///
    /// # Safety
    /// A non-NULL `ptr` must be valid for reading a `u32` and for writing
    /// the `struct_size` bytes it declares, for the whole call.
    pub(crate) unsafe fn new(ptr: *mut T, arg: impl Display) -> Result<Self> {
        // SAFETY: forwarded.
        unsafe { Self::optional(ptr, &arg) }?.ok_or_else(|| null(arg))
    }

    /// An output the caller may decline with NULL.
    ///
    /// # Safety
    /// As [`SizedOut::new`].
    pub(crate) unsafe fn optional(ptr: *mut T, arg: impl Display) -> Result<Option<Self>> {
        let Some(ptr) = NonNull::new(ptr) else {
            return Ok(None);
        };
        // SAFETY: the caller guarantees the first u32 is readable; read
        // unaligned in case the caller's buffer is not aligned for T.
        let size = unsafe { ptr.cast::<u32>().as_ptr().read_unaligned() } as usize;
        check_size::<T>(size, T::V1_SIZE, format_args!("{arg}->struct_size"))?;
        Ok(Some(SizedOut { ptr, size }))
    }

    /// Copies `value` out: `min(struct_size, sizeof T)` bytes, with the
    /// `struct_size` field set to that count. Bytes of the caller's struct
    /// past ours are left as they were.
    pub(crate) fn write(self, value: T) {
        let n = self.size.min(size_of::<T>());
        let value = std::mem::ManuallyDrop::new(value);
        let src = (&*value as *const T).cast::<u8>();
        let dst = self.ptr.as_ptr().cast::<u8>();
        // SAFETY: `dst` is valid for `self.size >= n` bytes (checked at
        // construction, promised by the caller), `src` for size_of::<T>() >= n;
        // they cannot overlap (`value` is ours). n >= V1_SIZE >= 4 and n <
        // 2^32, so struct_size holds it.
        unsafe {
            std::ptr::copy_nonoverlapping(src, dst, n);
            dst.cast::<u32>().write_unaligned(n as u32);
        }
    }
}

/// Declares `T: SizeVersioned` with `V1_SIZE = size`, asserting at compile
/// time that `struct_size: u32` is the first field and that the struct is at
/// least that large.
macro_rules! size_versioned {
    ($t:ty, v1_size = $v1:expr) => {
        // SAFETY: the assertions below check the layout the trait requires;
        // the type is #[repr(C)] with integer fields only.
        unsafe impl $crate::sized_out::SizeVersioned for $t {
            const V1_SIZE: usize = $v1;
        }
        const _: () = {
            assert!(::std::mem::offset_of!($t, struct_size) == 0);
            assert!(::std::mem::size_of::<$t>() >= $v1);
            assert!($v1 >= 8);
        };
    };
}
pub(crate) use size_versioned;

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(C)]
    #[derive(Debug, Clone, Copy, PartialEq, Default)]
    struct Stats {
        struct_size: u32,
        reserved0: u32,
        a: u64,
        b: u64,
    }
    size_versioned!(Stats, v1_size = 16);

    fn value() -> Stats {
        Stats {
            struct_size: 0,
            reserved0: 0,
            a: 7,
            b: 9,
        }
    }

    #[test]
    fn writes_the_whole_struct_and_its_size() {
        let mut s = Stats {
            struct_size: size_of::<Stats>() as u32,
            ..Default::default()
        };
        unsafe { SizedOut::new(&mut s, "out") }
            .unwrap()
            .write(value());
        assert_eq!(
            s,
            Stats {
                struct_size: 24,
                ..value()
            }
        );
    }

    // Append-only: an older caller's smaller struct gets only its fields.
    #[test]
    fn older_caller_gets_only_the_fields_it_knows() {
        let mut s = Stats {
            struct_size: 16,
            b: 0xdead,
            ..Default::default()
        };
        unsafe { SizedOut::new(&mut s, "out") }
            .unwrap()
            .write(value());
        assert_eq!((s.struct_size, s.a, s.b), (16, 7, 0xdead));
    }

    // A newer caller's larger struct: its unknown tail is left alone and
    // struct_size tells it how much was filled.
    #[test]
    fn newer_caller_learns_how_much_was_filled() {
        #[repr(C)]
        struct Newer {
            base: Stats,
            future: u64,
        }
        let mut n = Newer {
            base: Stats {
                struct_size: size_of::<Newer>() as u32,
                ..Default::default()
            },
            future: 0x5e,
        };
        unsafe { SizedOut::new(&mut n.base, "out") }
            .unwrap()
            .write(value());
        assert_eq!((n.base.struct_size, n.base.b, n.future), (24, 9, 0x5e));
    }

    // A size between two fields' ends is no version's sizeof: refused, the
    // struct untouched (it would get part of a field). Every multiple of
    // the alignment from the first version's size up is a version's.
    #[test]
    fn a_size_that_cuts_a_field_is_refused() {
        for size in [17u32, 20, 23, 25, 28, 4095] {
            let mut s = Stats {
                struct_size: size,
                a: 1,
                b: 2,
                ..Default::default()
            };
            let e = unsafe { SizedOut::new(&mut s, "out") }.err().unwrap();
            assert_eq!(e.kind(), ErrorKind::StructSizeUnsupported, "{size}");
            assert!(e.message().contains("alignment 8"), "{}", e.message());
            assert_eq!((s.struct_size, s.a, s.b), (size, 1, 2));
        }
        for size in [16u32, 24, 32, 4096] {
            let mut s = Stats {
                struct_size: size,
                ..Default::default()
            };
            assert!(unsafe { SizedOut::new(&mut s, "out") }.is_ok(), "{size}");
        }
    }

    #[test]
    fn bad_sizes_and_null_are_rejected() {
        for size in [0, 8, 15, 4097, u32::MAX] {
            let mut s = Stats {
                struct_size: size,
                ..Default::default()
            };
            let e = unsafe { SizedOut::new(&mut s, "out") }.err().unwrap();
            assert_eq!(e.kind(), ErrorKind::StructSizeUnsupported, "size {size}");
            assert!(
                e.message().starts_with("out->struct_size "),
                "{}",
                e.message()
            );
        }
        let e = unsafe { SizedOut::<Stats>::new(std::ptr::null_mut(), "out") }
            .err()
            .unwrap();
        assert_eq!(e.kind(), ErrorKind::NullArgument);
        assert!(
            unsafe { SizedOut::<Stats>::optional(std::ptr::null_mut(), "out") }
                .unwrap()
                .is_none()
        );
    }
}
