/*
 * libmooncake_meta for C++17: a header-only layer over the C API of
 * mooncake_meta.h. Every C function has a wrapper here but one:
 * mooncake_meta_remove_by_regex, kept in C as 0.1.0 shipped it (an empty
 * tenant meaning every tenant) and superseded by the two calls
 * remove_by_regex (one tenant; mooncake_meta_remove_by_regex_in_tenant)
 * and remove_by_regex_all_tenants wrap. The C header stays the reference
 * for what each call does (docs/CONTRACT.md for the behaviour).
 *
 * Conventions:
 * - Errors are exceptions: a failed call throws mooncake_meta::error, whose
 *   code() is the C status (a negative MOONCAKE_META_* value) and whose
 *   what() is the library's message (it names the function and the
 *   argument), or this header's for what it refuses itself (starting
 *   "mooncake_meta.hpp: "). Batch calls are the one exception to the rule:
 *   they report each key's status in their result (see batch_status),
 *   whole-batch refusals this header makes itself included.
 * - The linked library must be at least as new as this header (the same
 *   ABI major and no older minor): an older one fills only the fields it
 *   knows of the size-versioned output structs, and the newer ones would
 *   read as 0. Creating a master checks it (see metrics_snapshot) and
 *   throws MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED.
 * - Ownership is RAII: master, config, c_error, bytes and key_list each own
 *   one library object and release it with its C _free function. They are
 *   movable, not copyable; a moved-from handle holds nothing: a call on it
 *   reaches the library with NULL and throws error with code
 *   MOONCAKE_META_NULL_ARGUMENT (a batch call reports that code for every
 *   key; bytes and key_list read as empty; master(config) refuses an empty
 *   config rather than taking the defaults).
 * - Keys, tenants, group and segment names, patterns and paths are string
 *   views, only read during the call: a std::string_view, a std::string,
 *   a C string, a braced {pointer, length}, or (tenants and names; a key
 *   as the second of a braced {tenant, name}) anything else that converts
 *   to a std::string_view or to a C string. A key alone converts from a C
 *   string, a std::string or a std::string_view. A
 *   NULL C string (as an argument or an element of a range of names) is
 *   never read: the call throws MOONCAKE_META_NULL_ARGUMENT naming the
 *   argument ("mooncake_meta.hpp: key is NULL"); a batch call is refused
 *   as a whole with that code instead. Names the C API takes as
 *   NUL-terminated strings (preferred segments, group, copy targets,
 *   paths) are copied once into the configuration or call; one containing
 *   a NUL byte is refused with MOONCAKE_META_INVALID_PARAMS before the
 *   library is called.
 * - Allocations: the std::vector / std::string results, each buffer grown
 *   and the call repeated while the content outgrows it (with some headroom
 *   for metrics_prometheus_text, snapshot_vector and journal_vector, whose
 *   content may grow between two calls); the copies of NUL-terminated names
 *   above; the pointer/length arrays of batch and restore_candidates calls,
 *   and a batch's copies of keys its range makes as it is walked (a view
 *   yielding strings); the scratch buffers of batch_put_start /
 *   batch_upsert_start (every key's replica slots, and the counts) and of
 *   batch_get_replica_list (one flat replica array, grown to the total the
 *   library asks for, and the counts); the messages of errors and of failed
 *   batches.
 * - Thread safety is the C library's: a master may be used from any number of
 *   threads at once (every method is const), except that destroying or
 *   assigning to it must not race another call on it. A config is internally
 *   locked. write_config and replicate_config are plain values: share them
 *   read-only. bytes and key_list are immutable once returned.
 *
 *   mooncake_meta::config cfg;
 *   cfg.set_manual_clock(1000);
 *   mooncake_meta::master m(cfg);
 *   m.mount_segment(1, "seg0", 0x10000000, 64 << 20);
 *   auto w = m.put_start(1, "k", 4096, mooncake_meta::write_config().soft_pin_ttl_ms(60000));
 *   m.put_end(1, "k", mooncake_meta::selector::all, w.token);
 */
#ifndef MOONCAKE_META_HPP
#define MOONCAKE_META_HPP

#if !defined(__cplusplus) || \
    (__cplusplus < 201703L && (!defined(_MSVC_LANG) || _MSVC_LANG < 201703L))
#error "mooncake_meta.hpp needs C++17 or later (use mooncake_meta.h from C)"
#endif

#include "mooncake_meta.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace mooncake_meta {

// ---------------------------------------------------------------------------
// Version and status names
// ---------------------------------------------------------------------------

/// The running library's version, "MAJOR.MINOR.PATCH" (static storage).
inline std::string_view version() noexcept { return mooncake_meta_version(); }

/// The running library's ABI major; compare with MOONCAKE_META_ABI_VERSION.
inline std::uint32_t abi_version() noexcept { return mooncake_meta_abi_version(); }

/// The name of a status code without the prefix ("OBJECT_NOT_FOUND"), or
/// "UNKNOWN_STATUS" (static storage).
inline const char *status_name(std::int32_t status) noexcept {
    return mooncake_meta_status_name(status);
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// A failed call: code() is the C status (MOONCAKE_META_*), what() the
/// library's message. Copyable, like every standard exception.
class error : public std::runtime_error {
public:
    error(std::int32_t code, const std::string &message)
        : std::runtime_error(message), code_(code) {}

    /// The negative MOONCAKE_META_* status of the failed call.
    std::int32_t code() const noexcept { return code_; }
    /// status_name(code()).
    const char *name() const noexcept { return mooncake_meta_status_name(code_); }

private:
    std::int32_t code_;
};

/// Owns one mooncake_meta_error (the C out-parameter of every fallible
/// call) and frees it with mooncake_meta_error_free. Useful when mixing
/// direct C calls with this header:
///
///   mooncake_meta::c_error e;
///   if (mooncake_meta_remove(m.get(), NULL, 0, "k", 1, 0, e.out()) != MOONCAKE_META_OK)
///       std::puts(e.message());
///
/// Not thread-safe: one thread at a time.
class c_error {
public:
    c_error() noexcept = default;
    /// Takes ownership of `err` (may be NULL).
    explicit c_error(mooncake_meta_error *err) noexcept : p_(err) {}
    ~c_error() { mooncake_meta_error_free(p_); }
    c_error(const c_error &) = delete;
    c_error &operator=(const c_error &) = delete;
    c_error(c_error &&o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    c_error &operator=(c_error &&o) noexcept {
        if (this != &o) {
            mooncake_meta_error_free(p_);
            p_ = std::exchange(o.p_, nullptr);
        }
        return *this;
    }

    /// Frees any error held and returns the slot for a C call's `err`.
    mooncake_meta_error **out() noexcept {
        mooncake_meta_error_free(p_);
        p_ = nullptr;
        return &p_;
    }
    /// mooncake_meta_error_code (MOONCAKE_META_NULL_ARGUMENT when empty).
    std::int32_t code() const noexcept { return mooncake_meta_error_code(p_); }
    /// mooncake_meta_error_message; valid while this object holds the error.
    const char *message() const noexcept { return mooncake_meta_error_message(p_); }
    mooncake_meta_error *get() const noexcept { return p_; }
    /// Gives up ownership; the caller frees the result.
    mooncake_meta_error *release() noexcept { return std::exchange(p_, nullptr); }
    explicit operator bool() const noexcept { return p_ != nullptr; }

private:
    mooncake_meta_error *p_ = nullptr;
};

namespace detail {

/// The exception for a failed status, with the library's message when it
/// left one (the C error is freed by `err`'s destructor either way).
inline error make_error(std::int32_t status, const c_error &err) {
    if (err) return error(status, err.message());
    return error(status, mooncake_meta_status_name(status));
}

/// Throws for any status but OK.
inline void check(std::int32_t status, const c_error &err) {
    if (status != MOONCAKE_META_OK) throw make_error(status, err);
}

[[noreturn]] inline void invalid(const std::string &message) {
    throw error(MOONCAKE_META_INVALID_PARAMS, message);
}

/// The error for a NULL C string given as `what`.
[[noreturn]] inline void null_argument(const std::string &what) {
    throw error(MOONCAKE_META_NULL_ARGUMENT, "mooncake_meta.hpp: " + what + " is NULL");
}

// What a text argument is called in its NULL_ARGUMENT message.
struct tenant_arg { static constexpr const char *value = "tenant"; };
struct key_arg { static constexpr const char *value = "key"; };
struct segment_arg { static constexpr const char *value = "segment name"; };
struct from_arg { static constexpr const char *value = "from segment"; };
struct to_arg { static constexpr const char *value = "to segment"; };
struct group_arg { static constexpr const char *value = "group"; };
struct prefix_arg { static constexpr const char *value = "prefix"; };
struct after_arg { static constexpr const char *value = "after"; };
struct pattern_arg { static constexpr const char *value = "pattern"; };
struct path_arg { static constexpr const char *value = "path"; };
// An element of a list of names; its NULL message names the list instead.
struct name_arg { static constexpr const char *value = "name"; };

template <class D> struct is_text_like
    : std::integral_constant<bool, std::is_same<D, std::string>::value ||
                                       std::is_same<D, std::string_view>::value ||
                                       std::is_pointer<D>::value || std::is_array<D>::value ||
                                       std::is_same<D, std::nullptr_t>::value> {};
template <class N> class text;
template <class N> struct is_text_like<text<N>> : std::true_type {};
inline std::string_view as_view(std::string_view v) noexcept { return v; }

/// A string argument, viewed during the call: a std::string_view, a
/// std::string, anything else that converts to a std::string_view, or a C
/// string. A NULL C string is kept as such (never read): get() throws
/// MOONCAKE_META_NULL_ARGUMENT naming the argument (Name::value), and a
/// batch call asks null() first to refuse the batch instead.
template <class Name> class text {
public:
    text() noexcept = default;
    text(const char *s) noexcept : view_(s ? std::string_view(s) : std::string_view()), null_(!s) {}
    text(std::string_view s) noexcept : view_(s) {}
    text(const std::string &s) noexcept : view_(s) {}
    /// A pointer and a length, as std::string_view{p, n} took them.
    text(const char *p, std::size_t n) noexcept
        : view_(p ? std::string_view(p, n) : std::string_view()), null_(!p && n != 0) {}
    template <class T, class D = typename std::decay<T>::type,
              typename std::enable_if<!is_text_like<D>::value &&
                                          (std::is_convertible<T &&, std::string_view>::value ||
                                           std::is_convertible<T &&, const char *>::value),
                                      int>::type = 0>
    text(T &&s) {
        if constexpr (std::is_convertible<T &&, std::string_view>::value) {
            view_ = as_view(std::forward<T>(s)); // copy-initialised: the conversion function
        } else {
            const char *c = std::forward<T>(s);
            null_ = !c;
            if (c) view_ = c;
        }
    }

    /// Whether this is a NULL C string.
    bool null() const noexcept { return null_; }
    /// The view; a NULL C string throws MOONCAKE_META_NULL_ARGUMENT.
    std::string_view get() const {
        if (null_) null_argument(Name::value);
        return view_;
    }

private:
    std::string_view view_;
    bool null_ = false;
};

template <class T> struct is_text : std::false_type {};
template <class Name> struct is_text<text<Name>> : std::true_type {};

/// Whether an element of a range of names is a NULL C string.
template <class T> bool null_string(const T &s) noexcept {
    if constexpr (is_text<T>::value)
        return s.null();
    else if constexpr (std::is_pointer<T>::value)
        return s == nullptr;
    else if constexpr (!std::is_convertible<const T &, std::string_view>::value &&
                       std::is_convertible<const T &, const char *>::value)
        return static_cast<const char *>(s) == nullptr;
    else
        return false;
}

/// An element of a range of names, not a NULL C string, as a view.
template <class T> std::string_view view_of(const T &s) {
    if constexpr (is_text<T>::value)
        return s.get();
    else
        return std::string_view(s);
}

/// "what[i]", naming an element of a range in a message.
inline std::string element(const char *what, std::size_t i) {
    return std::string(what) + "[" + std::to_string(i) + "]";
}

/// A string the C API reads NUL-terminated; refuses an embedded NUL, which
/// would silently name something else.
inline std::string c_string(std::string_view s, const char *what) {
    if (s.find('\0') != std::string_view::npos)
        invalid(std::string("mooncake_meta.hpp: ") + what + " contains a NUL byte");
    return std::string(s);
}

/// NUL-terminated copies of a range of names plus their pointer array.
/// Movable (the strings' heap or SSO buffers move with the vector's block);
/// copying rebuilds the pointers.
class c_strings {
public:
    c_strings() = default;
    /// `names` is any range of string-like elements; a NULL C string among
    /// them throws MOONCAKE_META_NULL_ARGUMENT naming it ("what[i]").
    template <class Range> c_strings(const Range &names, const char *what) {
        std::size_t i = 0;
        for (const auto &n : names) {
            if (null_string(n)) null_argument(element(what, i));
            strings_.push_back(c_string(view_of(n), what));
            i++;
        }
        rebuild();
    }
    c_strings(const c_strings &o) : strings_(o.strings_) { rebuild(); }
    // Copy, then swap in: an allocation failure while copying leaves this
    // object as it was (assigning the strings one by one would free the
    // buffers its pointers name before the pointers are rebuilt).
    c_strings &operator=(const c_strings &o) {
        if (this != &o) {
            c_strings copy(o);
            *this = std::move(copy);
        }
        return *this;
    }
    c_strings(c_strings &&) noexcept = default;
    c_strings &operator=(c_strings &&) noexcept = default;
    ~c_strings() = default;

    const char *const *data() const noexcept { return ptrs_.empty() ? nullptr : ptrs_.data(); }
    std::size_t size() const noexcept { return ptrs_.size(); }
    const std::vector<std::string> &strings() const noexcept { return strings_; }

private:
    void rebuild() {
        ptrs_.clear();
        ptrs_.reserve(strings_.size());
        for (const auto &s : strings_) ptrs_.push_back(s.c_str());
    }
    std::vector<std::string> strings_;
    std::vector<const char *> ptrs_;
};

/// A batch's keys as the C API's parallel pointer and length arrays. It
/// points into the caller's strings, which must outlive it (one call), when
/// the range yields references to stored strings; a range that makes its
/// elements as it goes (a C++20 `views::transform` returning strings) is
/// copied first, since each element would be gone by the call. A NULL C
/// string among the keys is not read: null_at() says where the first one
/// is, and the batch is refused before its C call.
class key_array {
public:
    static constexpr std::size_t none = static_cast<std::size_t>(-1);

    template <class Range> explicit key_array(const Range &keys) {
        std::size_t i = 0;
        if constexpr (std::is_lvalue_reference<decltype(*std::begin(keys))>::value) {
            for (const auto &k : keys) {
                if (null_string(k)) {
                    note_null(i);
                    add(std::string_view());
                } else {
                    add(view_of(k));
                }
                i++;
            }
        } else {
            // All copied before any pointer is taken: the vector does not
            // move its strings afterwards.
            for (auto &&k : keys) {
                if (null_string(k)) {
                    note_null(i);
                    owned_.emplace_back();
                } else {
                    owned_.emplace_back(view_of(k));
                }
                i++;
            }
            for (const std::string &k : owned_) add(k);
        }
    }
    // The pointers may name `owned_`'s strings, which a copy or a move
    // would not carry along (short strings live inside the object).
    key_array(const key_array &) = delete;
    key_array &operator=(const key_array &) = delete;

    const char *const *ptrs() const noexcept { return ptrs_.empty() ? nullptr : ptrs_.data(); }
    const std::size_t *lens() const noexcept { return lens_.empty() ? nullptr : lens_.data(); }
    std::size_t size() const noexcept { return ptrs_.size(); }
    /// The index of the first NULL C string among the keys, or `none`.
    std::size_t null_at() const noexcept { return null_at_; }

private:
    void add(std::string_view v) {
        ptrs_.push_back(v.data());
        lens_.push_back(v.size());
    }
    void note_null(std::size_t i) noexcept {
        if (null_at_ == none) null_at_ = i;
    }
    std::vector<std::string> owned_;
    std::vector<const char *> ptrs_;
    std::vector<std::size_t> lens_;
    std::size_t null_at_ = none;
};

/// A size-versioned output struct with struct_size set.
template <class T> T sized() noexcept {
    T t{};
    t.struct_size = static_cast<std::uint32_t>(sizeof(T));
    return t;
}

} // namespace detail

// ---------------------------------------------------------------------------
// Plain types and enums
// ---------------------------------------------------------------------------

/// One replica (the C struct: id, kind, status, segment_id, address, size,
/// client).
using replica = mooncake_meta_replica;
/// What an unmount dropped.
using unmount_report = mooncake_meta_unmount_report;
/// What one soft-pin cleanup cycle did.
using cleanup_stats = mooncake_meta_cleanup_stats;
/// What one eviction run did.
using eviction_report = mooncake_meta_eviction_report;
/// Every scalar metric of a master, `clock_skew_ms` (the master's timeline
/// minus the wall clock) included. Of the size-versioned structs, this one
/// gained fields last, so creating a master reads it once: a library that
/// fills less than sizeof(metrics_snapshot) is older than this header (the
/// newer fields, here and in the other reports, would read as 0), and the
/// master is freed and MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED thrown.
using metrics_snapshot = mooncake_meta_metrics_snapshot;
/// What a restore did, `clock_shift_ms` (how far every stored instant was
/// moved onto the restoring master's timeline) included.
using restore_report = mooncake_meta_restore_report;
/// The change journal's counters (all zero without a journal).
using journal_stats = mooncake_meta_journal_stats;
/// What applying journal bytes to a standby did.
using apply_report = mooncake_meta_apply_report;
/// What promoting a standby did.
using promote_report = mooncake_meta_promote_report;

/// The pool of a segment (MOONCAKE_META_POOL_*).
enum class pool : std::uint32_t {
    memory = MOONCAKE_META_POOL_MEMORY,
    nof_ssd = MOONCAKE_META_POOL_NOF_SSD,
};

/// The replicas an End/Revoke acts on (MOONCAKE_META_SELECT_*).
enum class selector : std::uint32_t {
    memory = MOONCAKE_META_SELECT_MEMORY,
    nof_ssd = MOONCAKE_META_SELECT_NOF_SSD,
    all = MOONCAKE_META_SELECT_ALL,
};

/// What a write does to the soft pin when it first becomes readable
/// (MOONCAKE_META_SOFT_PIN_*).
enum class soft_pin_action : std::uint32_t {
    preserve = MOONCAKE_META_SOFT_PIN_PRESERVE,
    enable = MOONCAKE_META_SOFT_PIN_ENABLE,
    disable = MOONCAKE_META_SOFT_PIN_DISABLE,
};

/// A key and its tenant, both only viewed during the call. Converts from a
/// key alone (the default tenant): m.exist("k"), m.exist({"tenant", "k"}).
/// A NULL C string for either throws MOONCAKE_META_NULL_ARGUMENT
/// ("mooncake_meta.hpp: key is NULL", or tenant) before any call.
struct key {
    std::string_view tenant;
    std::string_view name;

    key(const char *name_) : name(detail::text<detail::key_arg>(name_).get()) {}
    key(std::string_view name_) noexcept : name(name_) {}
    key(const std::string &name_) noexcept : name(name_) {}
    key(detail::text<detail::tenant_arg> tenant_, detail::text<detail::key_arg> name_)
        : tenant(tenant_.get()), name(name_.get()) {}
};

/// The staged PROCESSING replicas of a Start and its write token (never 0).
struct write_result {
    std::vector<replica> replicas;
    std::uint64_t token = 0;
};

/// The deadline index's sizes.
struct deadline_index_sizes {
    std::uint64_t heap = 0; ///< heap entries, stale ones included
    std::uint64_t live = 0; ///< live registrations
};

/// Borrowed bytes (a snapshot to restore, journal records to apply):
/// pointer and length, only read during the call. It converts from a vector
/// or a bytes that outlives it, never from a temporary, whose storage is
/// freed at the end of the statement: `mm::byte_view v = m.snapshot();`
/// does not compile. The calls that read bytes take a byte_arg instead,
/// which also takes a temporary (it lives through the call):
/// `r.restore(m.snapshot())`, `s.journal_apply(p.journal_vector(1, next))`,
/// `r.restore_candidates({m.snapshot(), saved})`. A function of your own
/// that should take a temporary takes a `const byte_arg &`, not a byte_view.
struct byte_view {
    const std::uint8_t *data = nullptr;
    std::size_t size = 0;

    byte_view() = default;
    byte_view(const std::uint8_t *d, std::size_t n) : data(d), size(n) {}
    byte_view(const std::vector<std::uint8_t> &v) : data(v.data()), size(v.size()) {}
    byte_view(const std::vector<std::uint8_t> &&) = delete;
};

// ---------------------------------------------------------------------------
// Library-owned results
// ---------------------------------------------------------------------------

/// A byte buffer owned by the library (a snapshot, Prometheus text), freed
/// with mooncake_meta_bytes_free. The data is followed by a NUL that size()
/// does not count. Immutable: any number of threads may read it at once.
class bytes {
public:
    bytes() noexcept = default;
    /// Takes ownership of `b` (may be NULL).
    explicit bytes(mooncake_meta_bytes *b) noexcept : p_(b) {}
    ~bytes() { mooncake_meta_bytes_free(p_); }
    bytes(const bytes &) = delete;
    bytes &operator=(const bytes &) = delete;
    bytes(bytes &&o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    bytes &operator=(bytes &&o) noexcept {
        if (this != &o) {
            mooncake_meta_bytes_free(p_);
            p_ = std::exchange(o.p_, nullptr);
        }
        return *this;
    }

    /// The first byte (NULL when empty-handed); valid while this object lives.
    const std::uint8_t *data() const noexcept { return mooncake_meta_bytes_data(p_); }
    std::size_t size() const noexcept { return mooncake_meta_bytes_len(p_); }
    bool empty() const noexcept { return size() == 0; }
    /// The content as text (Prometheus exposition).
    std::string_view str() const noexcept {
        const std::uint8_t *d = data();
        return d ? std::string_view(reinterpret_cast<const char *>(d), size())
                 : std::string_view();
    }
    /// The content as a borrowed view, valid while this object lives; not
    /// from a temporary (see byte_view).
    operator byte_view() const & noexcept { return byte_view(data(), size()); }
    operator byte_view() const && = delete;
    mooncake_meta_bytes *get() const noexcept { return p_; }
    mooncake_meta_bytes *release() noexcept { return std::exchange(p_, nullptr); }
    explicit operator bool() const noexcept { return p_ != nullptr; }

private:
    mooncake_meta_bytes *p_ = nullptr;
};

/// Bytes passed to a call (restore, journal_apply, an element of a
/// restore_candidates list, or a function of your own that should take a
/// temporary): a byte_view, a view of a bytes or vector that outlives it, or
/// a temporary bytes or vector it takes over (moved, not copied), so it
/// never dangles, however long it is kept. Movable, not copyable; a
/// moved-from one is empty. Like bytes, it converts to a byte_view only
/// while it lives (not from a temporary).
class byte_arg {
public:
    byte_arg() = default;
    byte_arg(const std::uint8_t *d, std::size_t n) : view_(d, n) {}
    byte_arg(byte_view v) : view_(v) {}
    byte_arg(const bytes &b) : view_(b) {}
    byte_arg(bytes &&b) noexcept : bytes_(std::move(b)), view_(bytes_) {}
    byte_arg(const bytes &&) = delete;
    byte_arg(const std::vector<std::uint8_t> &v) : view_(v) {}
    byte_arg(std::vector<std::uint8_t> &&v) noexcept : vector_(std::move(v)), view_(vector_) {}
    byte_arg(const std::vector<std::uint8_t> &&) = delete;
    byte_arg(const byte_arg &) = delete;
    byte_arg &operator=(const byte_arg &) = delete;
    // The views point to heap storage, which a move hands over unchanged.
    byte_arg(byte_arg &&o) noexcept
        : bytes_(std::move(o.bytes_)), vector_(std::move(o.vector_)),
          view_(std::exchange(o.view_, byte_view())) {}
    byte_arg &operator=(byte_arg &&o) noexcept {
        if (this != &o) {
            bytes_ = std::move(o.bytes_);
            vector_ = std::move(o.vector_);
            view_ = std::exchange(o.view_, byte_view());
        }
        return *this;
    }
    ~byte_arg() = default;

    const std::uint8_t *data() const noexcept { return view_.data; }
    std::size_t size() const noexcept { return view_.size; }
    operator byte_view() const & noexcept { return view_; }
    operator byte_view() const && = delete;

private:
    bytes bytes_;                       // a temporary bytes taken over
    std::vector<std::uint8_t> vector_;  // a temporary vector taken over
    byte_view view_;                    // the bytes, wherever they live
};

/// One page of a key listing, owned by the library, freed with
/// mooncake_meta_key_list_free. Its views stay valid while it lives.
/// Immutable: any number of threads may read it at once.
class key_list {
public:
    key_list() noexcept = default;
    /// Takes ownership of `l` (may be NULL).
    explicit key_list(mooncake_meta_key_list *l) noexcept : p_(l) {}
    ~key_list() { mooncake_meta_key_list_free(p_); }
    key_list(const key_list &) = delete;
    key_list &operator=(const key_list &) = delete;
    key_list(key_list &&o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    key_list &operator=(key_list &&o) noexcept {
        if (this != &o) {
            mooncake_meta_key_list_free(p_);
            p_ = std::exchange(o.p_, nullptr);
        }
        return *this;
    }

    /// The number of keys (0 when empty-handed).
    std::size_t size() const noexcept { return mooncake_meta_key_list_len(p_); }
    bool empty() const noexcept { return size() == 0; }
    /// Key `index`; out of range throws MOONCAKE_META_INVALID_PARAMS.
    std::string_view at(std::size_t index) const {
        c_error err;
        const char *ptr = nullptr;
        std::size_t len = 0;
        detail::check(mooncake_meta_key_list_get(p_, index, &ptr, &len, err.out()), err);
        return std::string_view(ptr, len);
    }
    std::string_view operator[](std::size_t index) const { return at(index); }
    /// The cursor to pass as `after` for the next page, or nullopt on the
    /// last page.
    std::optional<std::string_view> next_cursor() const {
        c_error err;
        int has = 0;
        const char *ptr = nullptr;
        std::size_t len = 0;
        detail::check(mooncake_meta_key_list_next_cursor(p_, &has, &ptr, &len, err.out()), err);
        if (!has) return std::nullopt;
        return std::string_view(ptr, len);
    }
    /// Copies of every key of the page.
    std::vector<std::string> to_vector() const {
        std::vector<std::string> out;
        out.reserve(size());
        for (std::size_t i = 0; i < size(); i++) out.emplace_back(at(i));
        return out;
    }
    mooncake_meta_key_list *get() const noexcept { return p_; }
    mooncake_meta_key_list *release() noexcept { return std::exchange(p_, nullptr); }
    explicit operator bool() const noexcept { return p_ != nullptr; }

private:
    mooncake_meta_key_list *p_ = nullptr;
};

// ---------------------------------------------------------------------------
// Configurations
// ---------------------------------------------------------------------------

/// A master configuration (mooncake_meta_config), holding the documented
/// defaults when created. A master copies it, so it may be destroyed or
/// reused afterwards. Internally locked: setters may race (last write wins).
/// Setters return *this for chaining and throw error on a bad value.
class config {
public:
    /// mooncake_meta_config_new.
    config() {
        c_error err;
        detail::check(mooncake_meta_config_new(&p_, err.out()), err);
    }
    /// Takes ownership of `cfg` (may be NULL).
    explicit config(mooncake_meta_config *cfg) noexcept : p_(cfg) {}
    ~config() { mooncake_meta_config_free(p_); }
    config(const config &) = delete;
    config &operator=(const config &) = delete;
    config(config &&o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    config &operator=(config &&o) noexcept {
        if (this != &o) {
            mooncake_meta_config_free(p_);
            p_ = std::exchange(o.p_, nullptr);
        }
        return *this;
    }

    /// mooncake_meta_config_validate: checks as master creation will.
    void validate() const {
        c_error err;
        detail::check(mooncake_meta_config_validate(p_, err.out()), err);
    }
    config &set_default_kv_lease_ttl_ms(std::uint64_t ttl_ms) {
        return set(mooncake_meta_config_set_default_kv_lease_ttl_ms, ttl_ms);
    }
    config &set_default_kv_soft_pin_ttl_ms(std::uint64_t ttl_ms) {
        return set(mooncake_meta_config_set_default_kv_soft_pin_ttl_ms, ttl_ms);
    }
    config &set_max_kv_soft_pin_ttl_ms(std::uint64_t ttl_ms) {
        return set(mooncake_meta_config_set_max_kv_soft_pin_ttl_ms, ttl_ms);
    }
    config &set_max_group_retention_ttl_ms(std::uint64_t ttl_ms) {
        return set(mooncake_meta_config_set_max_group_retention_ttl_ms, ttl_ms);
    }
    config &set_max_retained_groups(std::uint64_t max_groups) {
        return set(mooncake_meta_config_set_max_retained_groups, max_groups);
    }
    config &set_allow_evict_soft_pinned_objects(bool allow) {
        return set(mooncake_meta_config_set_allow_evict_soft_pinned_objects, allow ? 1 : 0);
    }
    config &set_eviction_ratio(double ratio) {
        return set(mooncake_meta_config_set_eviction_ratio, ratio);
    }
    config &set_eviction_high_watermark_ratio(double ratio) {
        return set(mooncake_meta_config_set_eviction_high_watermark_ratio, ratio);
    }
    config &set_put_start_discard_timeout_ms(std::uint64_t timeout_ms) {
        return set(mooncake_meta_config_set_put_start_discard_timeout_ms, timeout_ms);
    }
    config &set_put_start_release_timeout_ms(std::uint64_t timeout_ms) {
        return set(mooncake_meta_config_set_put_start_release_timeout_ms, timeout_ms);
    }
    config &set_soft_pin_cleanup_interval_ms(std::uint64_t interval_ms) {
        return set(mooncake_meta_config_set_soft_pin_cleanup_interval_ms, interval_ms);
    }
    config &set_eviction_check_interval_ms(std::uint64_t interval_ms) {
        return set(mooncake_meta_config_set_eviction_check_interval_ms, interval_ms);
    }
    config &set_sweep_interval_ms(std::uint64_t interval_ms) {
        return set(mooncake_meta_config_set_sweep_interval_ms, interval_ms);
    }
    config &set_shard_count(std::uint64_t shard_count) {
        return set(mooncake_meta_config_set_shard_count, shard_count);
    }
    /// Objects the master expects to hold (0 = no presizing; at most
    /// MOONCAKE_META_MAX_EXPECTED_OBJECTS, checked when the master is built).
    config &set_expected_objects(std::uint64_t expected_objects) {
        return set(mooncake_meta_config_set_expected_objects, expected_objects);
    }
    /// With set_expected_objects, allocate the presized tables at creation,
    /// resident and on huge pages where the system gives them (false, the
    /// default: resident as they are written); falls back silently.
    config &set_commit_presized(bool commit_presized) {
        return set(mooncake_meta_config_set_commit_presized, commit_presized ? 1 : 0);
    }
    /// Bytes the change journal may hold; 0 (the default) = no journal.
    config &set_journal_capacity_bytes(std::uint64_t journal_capacity_bytes) {
        return set(mooncake_meta_config_set_journal_capacity_bytes, journal_capacity_bytes);
    }
    /// A standby master (rejects client calls until promote()).
    config &set_standby(bool standby) {
        return set(mooncake_meta_config_set_standby, standby ? 1 : 0);
    }
    /// A fixed seed for key hashing and placement choice, so a randomized
    /// test replays exactly (default: random per master; leave it so in
    /// service).
    config &set_seed(std::uint64_t seed) {
        return set(mooncake_meta_config_set_seed, seed);
    }
    /// A manual clock starting at `start_ms`; for deterministic tests also
    /// set the three intervals to 0.
    config &set_manual_clock(std::uint64_t start_ms) {
        return set(mooncake_meta_config_set_manual_clock, start_ms);
    }
    config &set_system_clock() {
        c_error err;
        detail::check(mooncake_meta_config_set_system_clock(p_, err.out()), err);
        return *this;
    }

    mooncake_meta_config *get() const noexcept { return p_; }
    mooncake_meta_config *release() noexcept { return std::exchange(p_, nullptr); }
    explicit operator bool() const noexcept { return p_ != nullptr; }

private:
    template <class F, class V> config &set(F f, V value) {
        c_error err;
        detail::check(f(p_, value, err.out()), err);
        return *this;
    }
    mooncake_meta_config *p_ = nullptr;
};

/// The extended write configuration (mooncake_meta_write_config) with the
/// strings it points to. A value: copy it freely; share it read-only.
/// Defaults: PRESERVE, no TTL, one memory replica, no NOF_SSD replica, no
/// preferred segments, no group, no hard pin.
class write_config {
public:
    /// mooncake_meta_write_config_init.
    write_config() {
        c_error err;
        detail::check(mooncake_meta_write_config_init(&raw_, sizeof raw_, err.out()), err);
    }

    /// The soft-pin action; clears a TTL unless the action is ENABLE.
    write_config &soft_pin(soft_pin_action action) {
        raw_.soft_pin_action = static_cast<std::uint32_t>(action);
        if (action != soft_pin_action::enable) clear_soft_pin_ttl();
        return *this;
    }
    /// ENABLE with an explicit TTL (0 commits ordinary cache).
    write_config &soft_pin_ttl_ms(std::uint64_t ttl_ms) {
        raw_.soft_pin_action = MOONCAKE_META_SOFT_PIN_ENABLE;
        raw_.flags |= MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL;
        raw_.soft_pin_ttl_ms = ttl_ms;
        return *this;
    }
    /// No explicit TTL: ENABLE then uses the master's default.
    write_config &clear_soft_pin_ttl() {
        raw_.flags &= ~static_cast<std::uint32_t>(MOONCAKE_META_WRITE_HAS_SOFT_PIN_TTL);
        raw_.soft_pin_ttl_ms = 0;
        return *this;
    }
    write_config &hard_pin(bool on) {
        if (on)
            raw_.flags |= MOONCAKE_META_WRITE_HARD_PIN;
        else
            raw_.flags &= ~static_cast<std::uint32_t>(MOONCAKE_META_WRITE_HARD_PIN);
        return *this;
    }
    write_config &memory_replicas(std::uint32_t n) {
        raw_.memory_replicas = n;
        return *this;
    }
    write_config &nof_ssd_replicas(std::uint32_t n) {
        raw_.nof_ssd_replicas = n;
        return *this;
    }
    /// Segments to try first, in order (copied; a NUL byte is refused).
    template <class Range> write_config &preferred_segments(const Range &names) {
        preferred_ = detail::c_strings(names, "write_config.preferred_segments");
        return *this;
    }
    write_config &preferred_segments(std::initializer_list<detail::text<detail::name_arg>> names) {
        preferred_ = detail::c_strings(names, "write_config.preferred_segments");
        return *this;
    }
    /// The group to join at creation (copied; a NUL byte is refused).
    write_config &group(detail::text<detail::group_arg> name) {
        group_ = detail::c_string(name.get(), "write_config.group");
        has_group_ = true;
        return *this;
    }
    write_config &no_group() {
        group_.clear();
        has_group_ = false;
        return *this;
    }

    /// The scalar fields (struct_size, flags, action, TTL, counts, reserved0)
    /// for direct access; the pointer fields are ignored and set by c_config().
    mooncake_meta_write_config &raw() noexcept { return raw_; }
    const mooncake_meta_write_config &raw() const noexcept { return raw_; }

    /// The C struct, its pointers into this object: valid while this object
    /// lives unchanged.
    mooncake_meta_write_config c_config() const noexcept {
        mooncake_meta_write_config c = raw_;
        c.preferred_segments = preferred_.data();
        c.preferred_segments_count = preferred_.size();
        c.group = has_group_ ? group_.c_str() : nullptr;
        return c;
    }
    /// mooncake_meta_write_config_validate (what does not depend on a master).
    void validate() const {
        const mooncake_meta_write_config c = c_config();
        c_error err;
        detail::check(mooncake_meta_write_config_validate(&c, err.out()), err);
    }

private:
    mooncake_meta_write_config raw_{};
    detail::c_strings preferred_;
    std::string group_;
    bool has_group_ = false;
};

/// The legacy write configuration (mooncake_meta_replicate_config, upstream
/// mooncake_replicate_config) with its preferred segment names. A value.
/// Defaults: one memory replica, PRESERVE, no hard pin.
class replicate_config {
public:
    replicate_config() = default;

    replicate_config &replica_num(std::size_t n) {
        replica_num_ = n;
        return *this;
    }
    /// true: ENABLE with the master's default TTL; false: PRESERVE.
    replicate_config &with_soft_pin(bool on) {
        soft_pin_ = on;
        return *this;
    }
    replicate_config &with_hard_pin(bool on) {
        hard_pin_ = on;
        return *this;
    }
    template <class Range> replicate_config &preferred_segments(const Range &names) {
        preferred_ = detail::c_strings(names, "replicate_config.preferred_segments");
        return *this;
    }
    replicate_config &
    preferred_segments(std::initializer_list<detail::text<detail::name_arg>> names) {
        preferred_ = detail::c_strings(names, "replicate_config.preferred_segments");
        return *this;
    }

    /// The C struct, its pointers into this object: valid while this object
    /// lives unchanged.
    mooncake_meta_replicate_config c_config() const noexcept {
        mooncake_meta_replicate_config c{};
        c.replica_num = replica_num_;
        c.with_soft_pin = soft_pin_ ? 1 : 0;
        c.with_hard_pin = hard_pin_ ? 1 : 0;
        // The struct's field is `const char **` for upstream compatibility;
        // the library only reads through it.
        c.preferred_segments = const_cast<const char **>(preferred_.data());
        c.preferred_segments_count = preferred_.size();
        return c;
    }
    /// mooncake_meta_replicate_config_validate.
    void validate() const {
        const mooncake_meta_replicate_config c = c_config();
        c_error err;
        detail::check(mooncake_meta_replicate_config_validate(&c, err.out()), err);
    }

private:
    std::size_t replica_num_ = 1;
    bool soft_pin_ = false;
    bool hard_pin_ = false;
    detail::c_strings preferred_;
};

// ---------------------------------------------------------------------------
// Batch results
// ---------------------------------------------------------------------------

/// What a batch call did. Batch calls do not throw for a key that fails:
/// statuses[i] is key i's status (MOONCAKE_META_OK or a code), `status` the
/// call's (OK only when every key succeeded, else the first failure's) and
/// `message` the library's summary for a failed batch. A batch refused as a
/// whole gives every key the same code, whether the library refused it or
/// this header did before calling it (a NULL C string: NULL_ARGUMENT; sizes
/// or tokens not one per key: INVALID_PARAMS; `message` then starts
/// "mooncake_meta.hpp: " and names the function); so does a panic inside
/// the library (MOONCAKE_META_PANIC): which keys were done before it is
/// unknown, so no key reads OK. throw_if_failed() turns a failed batch into
/// an exception.
struct batch_status {
    std::int32_t status = MOONCAKE_META_OK;
    std::string message;
    std::vector<std::int32_t> statuses;

    bool ok() const noexcept { return status == MOONCAKE_META_OK; }
    void throw_if_failed() const {
        if (!ok()) throw error(status, message);
    }
};

/// retain_groups / release_groups: group i's status (MOONCAKE_META_OK,
/// MOONCAKE_META_INVALID_PARAMS for an empty id or one containing a NUL
/// byte, MOONCAKE_META_INVALID_UTF8 for one that is not UTF-8,
/// MOONCAKE_META_GROUP_RETENTION_FULL for a new group while
/// max_retained_groups are retained) and, for a retain, its deadline after
/// the call (0 unless OK). As for a batch, a refusal does not throw:
/// `status` is MOONCAKE_META_OK when the call was accepted (each group's
/// outcome is its own status, which may be a failure), else the code of the
/// call's refusal, which every status then holds (every deadline 0), with
/// `message` the library's (this header's for a NULL C string); nothing
/// changed. A bad shared argument (a TTL of 0 or above the maximum, a bad
/// tenant) is MOONCAKE_META_INVALID_PARAMS (a tenant that is not UTF-8:
/// MOONCAKE_META_INVALID_UTF8); a NULL C string as the tenant or a group is
/// MOONCAKE_META_NULL_ARGUMENT. throw_if_failed() turns a refusal into an
/// exception.
struct retention_result : batch_status {
    std::vector<std::uint64_t> deadlines;
};

/// batch_put_start / batch_upsert_start: key i's staged replicas and token
/// (empty and 0 when it failed).
struct batch_start_result : batch_status {
    std::vector<std::vector<replica>> replicas;
    std::vector<std::uint64_t> tokens;
};

/// batch_exist: whether key i has a readable replica.
struct batch_exist_result : batch_status {
    std::vector<bool> exists;
};

/// batch_get_replica_list: key i's readable replicas (empty when it failed).
/// The call first offers the library room for one replica per key. When
/// the keys' readable replicas outnumber that, the library does nothing
/// (no lease) but report the total, and the call is repeated with room for
/// it (again, should the total have grown meanwhile). A key that gains
/// replicas between the library's count and its read (a concurrent write)
/// alone fails with MOONCAKE_META_BUFFER_TOO_SMALL and no lease: read it
/// again with get_replica_list.
struct batch_get_result : batch_status {
    std::vector<std::vector<replica>> replicas;
};

namespace detail {

/// Room a batch Start reserves in its result's message before its C call:
/// more than any status name, so set_message's fallback allocates nothing.
constexpr std::size_t message_room = 64;

/// Sets `out` to make(), or, should that throw (an allocation failure), to
/// `status`'s name, which fits message_room without allocating.
template <class F> void set_message(std::string &out, std::int32_t status, F make) {
    try {
        out = make();
    } catch (...) {
        out.assign(mooncake_meta_status_name(status));
    }
}

/// After a PANIC which keys a batch call did is unknown: every key reads
/// PANIC, whatever the call left in the statuses (the library fills them
/// with PANIC; builds before that fill left them unspecified, and a zero
/// reads as OK).
inline void settle_statuses(batch_status &r) noexcept {
    if (r.status == MOONCAKE_META_PANIC)
        for (std::int32_t &s : r.statuses) s = MOONCAKE_META_PANIC;
}

/// A failed batch call's message: the library's, or the status name when it
/// left none.
inline void library_message(batch_status &r, const c_error &err) {
    if (r.status == MOONCAKE_META_OK) return;
    set_message(r.message, r.status, [&] {
        return err ? std::string(err.message()) : std::string(mooncake_meta_status_name(r.status));
    });
}

/// Completes a batch result after its C call: statuses, then message.
inline void finish_batch(batch_status &r, const c_error &err) {
    settle_statuses(r);
    library_message(r, err);
}

/// Refuses a batch of `n` keys before its C call, as the library refuses
/// one as a whole: `code` is the call's status and every key's, `message`
/// ("mooncake_meta.hpp: FUNCTION: why") the result's message. The caller
/// sizes the result's other outputs (empty replicas, zero tokens,
/// deadlines, false exists), as after a library refusal.
inline void refuse(batch_status &r, std::size_t n, std::int32_t code, const std::string &message) {
    r.status = code;
    r.statuses.assign(n, code);
    r.message = message;
}

/// Refuses the batch `fn` with MOONCAKE_META_NULL_ARGUMENT when its tenant
/// or one of its keys (`items`: "keys", "groups") is a NULL C string;
/// returns whether it did.
inline bool refuse_null(batch_status &r, const char *fn, const text<tenant_arg> &tenant,
                        const key_array &keys, const char *items) {
    if (!tenant.null() && keys.null_at() == key_array::none) return false;
    const std::string what = tenant.null() ? std::string("tenant") : element(items, keys.null_at());
    refuse(r, keys.size(), MOONCAKE_META_NULL_ARGUMENT,
           std::string("mooncake_meta.hpp: ") + fn + ": " + what + " is NULL");
    return true;
}

} // namespace detail

// ---------------------------------------------------------------------------
// The master
// ---------------------------------------------------------------------------

/// A metadata master (mooncake_meta_master), freed (its maintenance thread
/// stopped) on destruction. Every method is const and may be called from any
/// number of threads at once; destroying, moving from or assigning to a
/// master must not race another call on it. Clients are plain ids.
///
/// Creating one also checks that the linked library is not older than this
/// header (see metrics_snapshot): MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED
/// otherwise, with no master left behind.
class master {
public:
    /// A master with the documented defaults (system clock, background
    /// tasks on).
    master() { create(nullptr); }
    /// A master from `cfg`, which is copied. An empty (moved-from) config
    /// is MOONCAKE_META_NULL_ARGUMENT, not the defaults.
    explicit master(const config &cfg) {
        if (!cfg)
            throw error(MOONCAKE_META_NULL_ARGUMENT,
                        "mooncake_meta::master: the config is empty (moved from or released)");
        create(cfg.get());
    }
    /// Takes ownership of `m` (may be NULL). Unlike the constructors that
    /// create a master, it does not check the linked library's version
    /// (see metrics_snapshot).
    explicit master(mooncake_meta_master *m) noexcept : p_(m) {}
    ~master() { mooncake_meta_master_free(p_); }
    master(const master &) = delete;
    master &operator=(const master &) = delete;
    master(master &&o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    master &operator=(master &&o) noexcept {
        if (this != &o) {
            mooncake_meta_master_free(p_);
            p_ = std::exchange(o.p_, nullptr);
        }
        return *this;
    }

    mooncake_meta_master *get() const noexcept { return p_; }
    mooncake_meta_master *release() noexcept { return std::exchange(p_, nullptr); }
    explicit operator bool() const noexcept { return p_ != nullptr; }

    // -- clock --------------------------------------------------------------

    /// The master's now: ms on its timeline, anchored to the Unix epoch at
    /// creation and then monotonic, so a wall-clock step moves no deadline
    /// (docs/CONTRACT.md section 1). Every instant of this API is on it.
    std::uint64_t now() const {
        c_error err;
        std::uint64_t v = 0;
        detail::check(mooncake_meta_master_now(p_, &v, err.out()), err);
        return v;
    }
    /// Sets a manual clock (CLOCK_UNSUPPORTED backwards or on a system clock).
    void set_time(std::uint64_t to_ms) const {
        c_error err;
        detail::check(mooncake_meta_master_set_time(p_, to_ms, err.out()), err);
    }
    /// Advances a manual clock; returns the new instant.
    std::uint64_t advance_time(std::uint64_t by_ms) const {
        c_error err;
        std::uint64_t v = 0;
        detail::check(mooncake_meta_master_advance_time(p_, by_ms, &v, err.out()), err);
        return v;
    }
    /// The wall clock now (ms since the Unix epoch). No lifetime depends on
    /// it: it is what `metrics().clock_skew_ms` (timeline minus wall) is
    /// measured against and what a snapshot records. A manual clock's wall
    /// is its timeline unless set apart with set_wall_time.
    std::uint64_t wall_time() const {
        c_error err;
        std::uint64_t v = 0;
        detail::check(mooncake_meta_master_wall_time(p_, &v, err.out()), err);
        return v;
    }
    /// Sets a manual clock's wall apart from its timeline, as a wall-clock
    /// step would: no lease, soft pin or write timeout moves; the skew and
    /// the wall snapshots record do. CLOCK_UNSUPPORTED on a system clock,
    /// INVALID_PARAMS at `wall_ms >= INT64_MAX`; nothing changes on failure.
    void set_wall_time(std::uint64_t wall_ms) const {
        c_error err;
        detail::check(mooncake_meta_master_set_wall_time(p_, wall_ms, err.out()), err);
    }

    // -- segments -----------------------------------------------------------

    /// Mounts `size` bytes at `base` owned by `client`; returns the segment id.
    std::uint32_t mount_segment(std::uint64_t client, detail::text<detail::segment_arg> name,
                                std::uint64_t base, std::uint64_t size,
                                pool p = pool::memory) const {
        const std::string_view n = name.get();
        c_error err;
        std::uint32_t id = 0;
        detail::check(mooncake_meta_mount_segment(p_, client, n.data(), n.size(), base, size,
                                                  static_cast<std::uint32_t>(p), &id, err.out()),
                      err);
        return id;
    }
    unmount_report unmount_segment(std::uint64_t client,
                                   detail::text<detail::segment_arg> name) const {
        const std::string_view n = name.get();
        c_error err;
        auto r = detail::sized<unmount_report>();
        detail::check(mooncake_meta_unmount_segment(p_, client, n.data(), n.size(), &r, err.out()),
                      err);
        return r;
    }
    unmount_report unmount_client(std::uint64_t client) const {
        c_error err;
        auto r = detail::sized<unmount_report>();
        detail::check(mooncake_meta_unmount_client(p_, client, &r, err.out()), err);
        return r;
    }
    /// The name of mounted segment `segment_id`.
    std::string segment_name(std::uint32_t segment_id) const {
        std::string name(32, '\0');
        for (;;) {
            c_error err;
            std::size_t len = 0;
            std::int32_t st =
                mooncake_meta_segment_name(p_, segment_id, &name[0], name.size(), &len, err.out());
            if (st == MOONCAKE_META_BUFFER_TOO_SMALL && len > name.size()) {
                name.resize(len);
                continue;
            }
            detail::check(st, err);
            name.resize(len);
            return name;
        }
    }

    // -- writes -------------------------------------------------------------

    /// PutStart with the extended configuration.
    write_result put_start(std::uint64_t client, key k, std::uint64_t size,
                           const write_config &cfg = write_config()) const {
        const mooncake_meta_write_config c = cfg.c_config();
        return start(initial_cap(c), [&](replica *out, std::size_t cap, std::size_t *len,
                                         std::uint64_t *tok, mooncake_meta_error **e) {
            return mooncake_meta_put_start(p_, client, k.tenant.data(), k.tenant.size(),
                                           k.name.data(), k.name.size(), size, &c, out, cap, len,
                                           tok, e);
        });
    }
    /// PutStart with the legacy configuration (mooncake_meta_put_start_legacy).
    write_result put_start(std::uint64_t client, key k, std::uint64_t size,
                           const replicate_config &cfg) const {
        const mooncake_meta_replicate_config c = cfg.c_config();
        return start(initial_cap(c), [&](replica *out, std::size_t cap, std::size_t *len,
                                         std::uint64_t *tok, mooncake_meta_error **e) {
            return mooncake_meta_put_start_legacy(p_, client, k.tenant.data(), k.tenant.size(),
                                                  k.name.data(), k.name.size(), size, &c, out,
                                                  cap, len, tok, e);
        });
    }
    /// UpsertStart with the extended configuration.
    write_result upsert_start(std::uint64_t client, key k, std::uint64_t size,
                              const write_config &cfg = write_config()) const {
        const mooncake_meta_write_config c = cfg.c_config();
        return start(initial_cap(c), [&](replica *out, std::size_t cap, std::size_t *len,
                                         std::uint64_t *tok, mooncake_meta_error **e) {
            return mooncake_meta_upsert_start(p_, client, k.tenant.data(), k.tenant.size(),
                                              k.name.data(), k.name.size(), size, &c, out, cap,
                                              len, tok, e);
        });
    }
    /// UpsertStart with the legacy configuration
    /// (mooncake_meta_upsert_start_legacy).
    write_result upsert_start(std::uint64_t client, key k, std::uint64_t size,
                              const replicate_config &cfg) const {
        const mooncake_meta_replicate_config c = cfg.c_config();
        return start(initial_cap(c), [&](replica *out, std::size_t cap, std::size_t *len,
                                         std::uint64_t *tok, mooncake_meta_error **e) {
            return mooncake_meta_upsert_start_legacy(p_, client, k.tenant.data(), k.tenant.size(),
                                                     k.name.data(), k.name.size(), size, &c, out,
                                                     cap, len, tok, e);
        });
    }
    /// PutEnd; `token` 0 names none.
    void put_end(std::uint64_t client, key k, selector sel = selector::all,
                 std::uint64_t token = 0) const {
        end(mooncake_meta_put_end, client, k, sel, token);
    }
    void put_revoke(std::uint64_t client, key k, selector sel = selector::all,
                    std::uint64_t token = 0) const {
        end(mooncake_meta_put_revoke, client, k, sel, token);
    }
    void upsert_end(std::uint64_t client, key k, selector sel = selector::all,
                    std::uint64_t token = 0) const {
        end(mooncake_meta_upsert_end, client, k, sel, token);
    }
    void upsert_revoke(std::uint64_t client, key k, selector sel = selector::all,
                       std::uint64_t token = 0) const {
        end(mooncake_meta_upsert_revoke, client, k, sel, token);
    }

    // -- reads --------------------------------------------------------------

    /// Whether the key has a readable replica (and if so grants the lease).
    bool exist(key k) const {
        c_error err;
        int out = 0;
        detail::check(mooncake_meta_exist(p_, k.tenant.data(), k.tenant.size(), k.name.data(),
                                          k.name.size(), &out, err.out()),
                      err);
        return out != 0;
    }
    /// The readable replicas; grants the read lease.
    std::vector<replica> get_replica_list(key k) const {
        std::vector<replica> out(4);
        for (;;) {
            c_error err;
            std::size_t len = 0;
            std::int32_t st = mooncake_meta_get_replica_list(p_, k.tenant.data(), k.tenant.size(),
                                                             k.name.data(), k.name.size(),
                                                             out.data(), out.size(), &len, err.out());
            if (st == MOONCAKE_META_BUFFER_TOO_SMALL && len > out.size()) {
                out.resize(len);
                continue;
            }
            detail::check(st, err);
            out.resize(len);
            return out;
        }
    }
    /// The number of objects of every tenant.
    std::uint64_t key_count() const {
        c_error err;
        std::uint64_t n = 0;
        detail::check(mooncake_meta_key_count(p_, &n, err.out()), err);
        return n;
    }
    /// One page of `tenant`'s keys starting with `prefix`, after `after`,
    /// at most `limit` (0 = all).
    key_list list_keys(detail::text<detail::tenant_arg> tenant = {},
                       detail::text<detail::prefix_arg> prefix = {},
                       detail::text<detail::after_arg> after = {}, std::size_t limit = 0) const {
        const std::string_view t = tenant.get(), p = prefix.get(), a = after.get();
        c_error err;
        mooncake_meta_key_list *l = nullptr;
        detail::check(mooncake_meta_list_keys(p_, t.data(), t.size(), p.data(), p.size(), a.data(),
                                              a.size(), limit, &l, err.out()),
                      err);
        return key_list(l);
    }

    // -- removal ------------------------------------------------------------

    void remove(key k, bool force = false) const {
        c_error err;
        detail::check(mooncake_meta_remove(p_, k.tenant.data(), k.tenant.size(), k.name.data(),
                                           k.name.size(), force ? 1 : 0, err.out()),
                      err);
    }
    /// Removes every removable object; returns how many.
    std::uint64_t remove_all(bool force = false) const {
        c_error err;
        std::uint64_t n = 0;
        detail::check(mooncake_meta_remove_all(p_, force ? 1 : 0, &n, err.out()), err);
        return n;
    }
    /// Removes the removable objects of `tenant` (empty: the default tenant,
    /// as in every other call) whose key matches `pattern` (Rust regex
    /// syntax, unanchored); returns how many. (Up to 0.1.0 an empty tenant
    /// meant every tenant here: that is now `remove_by_regex_all_tenants`.)
    std::uint64_t remove_by_regex(detail::text<detail::pattern_arg> pattern,
                                  detail::text<detail::tenant_arg> tenant = {},
                                  bool force = false) const {
        const std::string_view p = pattern.get(), t = tenant.get();
        c_error err;
        std::uint64_t n = 0;
        detail::check(mooncake_meta_remove_by_regex_in_tenant(p_, t.data(), t.size(), p.data(),
                                                              p.size(), force ? 1 : 0, &n,
                                                              err.out()),
                      err);
        return n;
    }
    /// Removes the removable objects of every tenant whose key matches
    /// `pattern` (Rust regex syntax, unanchored); returns how many.
    std::uint64_t remove_by_regex_all_tenants(detail::text<detail::pattern_arg> pattern,
                                              bool force = false) const {
        const std::string_view p = pattern.get();
        c_error err;
        std::uint64_t n = 0;
        detail::check(mooncake_meta_remove_by_regex_all_tenants(p_, p.data(), p.size(),
                                                                force ? 1 : 0, &n, err.out()),
                      err);
        return n;
    }

    // -- replication --------------------------------------------------------

    /// CopyStart to each named segment; returns the PROCESSING targets.
    template <class Range> std::vector<replica> copy_start(key k, const Range &segments) const {
        return copy_start_(k, detail::c_strings(segments, "copy_start segments"));
    }
    std::vector<replica>
    copy_start(key k, std::initializer_list<detail::text<detail::name_arg>> segments) const {
        return copy_start_(k, detail::c_strings(segments, "copy_start segments"));
    }
    void copy_end(key k) const { task(mooncake_meta_copy_end, k); }
    void copy_revoke(key k) const { task(mooncake_meta_copy_revoke, k); }
    /// MoveStart from segment `from` to `to`; returns the PROCESSING target.
    replica move_start(key k, detail::text<detail::from_arg> from,
                       detail::text<detail::to_arg> to) const {
        const std::string_view f = from.get(), t = to.get();
        c_error err;
        replica r{};
        detail::check(mooncake_meta_move_start(p_, k.tenant.data(), k.tenant.size(), k.name.data(),
                                               k.name.size(), f.data(), f.size(), t.data(),
                                               t.size(), &r, err.out()),
                      err);
        return r;
    }
    void move_end(key k) const { task(mooncake_meta_move_end, k); }
    void move_revoke(key k) const { task(mooncake_meta_move_revoke, k); }
    /// PromotionStart from the LOCAL_DISK replica, trying `preferred` first;
    /// returns the staged memory replica.
    template <class Range> replica promotion_start(key k, const Range &preferred) const {
        return promotion_start_(k, detail::c_strings(preferred, "promotion_start preferred"));
    }
    replica promotion_start(key k,
                            std::initializer_list<detail::text<detail::name_arg>> preferred = {})
        const {
        return promotion_start_(k, detail::c_strings(preferred, "promotion_start preferred"));
    }
    /// PromotionEnd: `success` completes the staged replica, else frees it.
    void promotion_end(key k, bool success) const {
        c_error err;
        detail::check(mooncake_meta_promotion_end(p_, k.tenant.data(), k.tenant.size(),
                                                  k.name.data(), k.name.size(), success ? 1 : 0,
                                                  err.out()),
                      err);
    }
    /// Registers a COMPLETE LOCAL_DISK replica held by `client`.
    replica add_local_disk_replica(std::uint64_t client, key k, std::uint64_t size) const {
        c_error err;
        replica r{};
        detail::check(mooncake_meta_add_local_disk_replica(p_, client, k.tenant.data(),
                                                           k.tenant.size(), k.name.data(),
                                                           k.name.size(), size, &r, err.out()),
                      err);
        return r;
    }

    // -- batches (one tenant each; `keys` is any range of string-like) -------
    //
    // A NULL C string as the tenant or among the keys refuses the batch
    // before the library is called: every key MOONCAKE_META_NULL_ARGUMENT,
    // the message naming it ("mooncake_meta.hpp: batch_exist: keys[1] is
    // NULL"). So does a count this header checks (sizes, tokens), with
    // MOONCAKE_META_INVALID_PARAMS. Neither throws (see batch_status).

    /// PutStart for each key with per-key `sizes`: as many as keys, else
    /// every key fails with MOONCAKE_META_INVALID_PARAMS and nothing is done.
    template <class Keys>
    batch_start_result batch_put_start(std::uint64_t client,
                                       detail::text<detail::tenant_arg> tenant, const Keys &keys,
                                       const std::vector<std::uint64_t> &sizes,
                                       const write_config &cfg = write_config()) const {
        return batch_start(false, client, tenant, detail::key_array(keys), sizes, cfg);
    }
    /// UpsertStart for each key; `sizes` as for batch_put_start. A key whose
    /// in-place upsert has more replicas than the configuration asks for is
    /// retried with upsert_start, so every key's result is complete.
    template <class Keys>
    batch_start_result batch_upsert_start(std::uint64_t client,
                                          detail::text<detail::tenant_arg> tenant,
                                          const Keys &keys,
                                          const std::vector<std::uint64_t> &sizes,
                                          const write_config &cfg = write_config()) const {
        return batch_start(true, client, tenant, detail::key_array(keys), sizes, cfg);
    }
    /// PutEnd for each key; `tokens` empty (none named) or one per key (any
    /// other count fails every key with MOONCAKE_META_INVALID_PARAMS, and
    /// nothing is done).
    template <class Keys>
    batch_status batch_put_end(std::uint64_t client, detail::text<detail::tenant_arg> tenant,
                               const Keys &keys, selector sel = selector::all,
                               const std::vector<std::uint64_t> &tokens = {}) const {
        return batch_end(mooncake_meta_batch_put_end, "batch_put_end", client, tenant,
                         detail::key_array(keys), sel, tokens);
    }
    /// PutRevoke for each key; arguments as batch_put_end.
    template <class Keys>
    batch_status batch_put_revoke(std::uint64_t client, detail::text<detail::tenant_arg> tenant,
                                  const Keys &keys, selector sel = selector::all,
                                  const std::vector<std::uint64_t> &tokens = {}) const {
        return batch_end(mooncake_meta_batch_put_revoke, "batch_put_revoke", client, tenant,
                         detail::key_array(keys), sel, tokens);
    }
    template <class Keys>
    batch_exist_result batch_exist(detail::text<detail::tenant_arg> tenant,
                                   const Keys &keys) const {
        detail::key_array ka(keys);
        batch_exist_result r;
        r.exists.resize(ka.size());
        if (detail::refuse_null(r, "batch_exist", tenant, ka, "keys")) return r;
        const std::string_view t = tenant.get();
        std::vector<std::uint8_t> exists(ka.size());
        r.statuses.resize(ka.size());
        c_error err;
        r.status = mooncake_meta_batch_exist(p_, t.data(), t.size(), ka.ptrs(), ka.lens(),
                                             ka.size(), exists.data(), r.statuses.data(),
                                             err.out());
        detail::finish_batch(r, err);
        for (std::size_t i = 0; i < ka.size(); i++)
            r.exists[i] = r.statuses[i] == MOONCAKE_META_OK && exists[i] != 0;
        return r;
    }
    template <class Keys>
    batch_get_result batch_get_replica_list(detail::text<detail::tenant_arg> tenant,
                                            const Keys &keys) const {
        detail::key_array ka(keys);
        batch_get_result r;
        r.replicas.resize(ka.size());
        if (detail::refuse_null(r, "batch_get_replica_list", tenant, ka, "keys")) return r;
        const std::string_view t = tenant.get();
        r.statuses.resize(ka.size());
        // The explicit zero keeps g++ 12 at -O2/-O3 from a false
        // -Wstringop-overflow on the value-initialising fill.
        std::vector<std::size_t> counts(ka.size(), std::size_t{0});
        // Room for one replica per key first (see batch_get_result).
        std::vector<replica> flat(ka.size());
        for (;;) {
            c_error err;
            std::size_t len = 0;
            r.status = mooncake_meta_batch_get_replica_list(
                p_, t.data(), t.size(), ka.ptrs(), ka.lens(), ka.size(), flat.data(), flat.size(),
                counts.data(), &len, r.statuses.data(), err.out());
            // The whole batch did not fit: every status says so and `len` is
            // the total needed. Grow and retry (nothing was done).
            if (r.status == MOONCAKE_META_BUFFER_TOO_SMALL && len > flat.size()) {
                flat.resize(len);
                continue;
            }
            detail::finish_batch(r, err);
            break;
        }
        std::size_t off = 0;
        for (std::size_t i = 0; i < ka.size(); i++) {
            if (r.statuses[i] == MOONCAKE_META_OK) {
                r.replicas[i].assign(flat.begin() + static_cast<std::ptrdiff_t>(off),
                                     flat.begin() + static_cast<std::ptrdiff_t>(off + counts[i]));
                off += counts[i];
            }
        }
        return r;
    }
    template <class Keys>
    batch_status batch_remove(detail::text<detail::tenant_arg> tenant, const Keys &keys,
                              bool force = false) const {
        detail::key_array ka(keys);
        batch_status r;
        if (detail::refuse_null(r, "batch_remove", tenant, ka, "keys")) return r;
        const std::string_view t = tenant.get();
        r.statuses.resize(ka.size());
        c_error err;
        r.status = mooncake_meta_batch_remove(p_, t.data(), t.size(), ka.ptrs(), ka.lens(),
                                              ka.size(), force ? 1 : 0, r.statuses.data(),
                                              err.out());
        detail::finish_batch(r, err);
        return r;
    }

    // -- group retention ----------------------------------------------------

    /// Retains each group of `tenant` (empty = the default tenant) for
    /// `ttl_ms`: a deadline of max(active deadline, now + ttl_ms), never
    /// copied into a member's soft pin, never moved by reads or writes. A
    /// TTL of 0 or above the maximum, or a bad tenant, fails every group
    /// with MOONCAKE_META_INVALID_PARAMS and changes nothing; a NULL C
    /// string as the tenant or a group, with MOONCAKE_META_NULL_ARGUMENT
    /// (no throw: see retention_result).
    template <class Groups>
    retention_result retain_groups(detail::text<detail::tenant_arg> tenant, const Groups &groups,
                                   std::uint64_t ttl_ms) const {
        detail::key_array ga(groups);
        retention_result r;
        r.deadlines.resize(ga.size());
        if (detail::refuse_null(r, "retain_groups", tenant, ga, "groups")) return r;
        const std::string_view t = tenant.get();
        r.statuses.resize(ga.size());
        c_error err;
        r.status = mooncake_meta_retain_groups(p_, t.data(), t.size(), ga.ptrs(), ga.lens(),
                                               ga.size(), ttl_ms, r.statuses.data(),
                                               r.deadlines.data(), err.out());
        // Refused: every group holds the refusal's code (the library writes
        // it for a bad shared argument; a NULL master or a standby leave
        // the outputs unwritten) and no deadline.
        if (!r.ok()) {
            std::fill(r.statuses.begin(), r.statuses.end(), r.status);
            std::fill(r.deadlines.begin(), r.deadlines.end(), std::uint64_t{0});
        }
        detail::library_message(r, err);
        return r;
    }
    /// Ends each group's retention now (a group not retained is OK). A bad
    /// tenant fails every group with MOONCAKE_META_INVALID_PARAMS, a NULL C
    /// string as the tenant or a group with MOONCAKE_META_NULL_ARGUMENT;
    /// results as retention_result says (no deadlines).
    template <class Groups>
    retention_result release_groups(detail::text<detail::tenant_arg> tenant,
                                    const Groups &groups) const {
        detail::key_array ga(groups);
        retention_result r;
        if (detail::refuse_null(r, "release_groups", tenant, ga, "groups")) return r;
        const std::string_view t = tenant.get();
        r.statuses.resize(ga.size());
        c_error err;
        r.status = mooncake_meta_release_groups(p_, t.data(), t.size(), ga.ptrs(), ga.lens(),
                                                ga.size(), r.statuses.data(), err.out());
        // Refused: every group holds the refusal's code, as for a retain.
        if (!r.ok()) std::fill(r.statuses.begin(), r.statuses.end(), r.status);
        detail::library_message(r, err);
        return r;
    }

    /// The group's active retention deadline, or nullopt.
    std::optional<std::uint64_t>
    group_retention_deadline(detail::text<detail::tenant_arg> tenant,
                             detail::text<detail::group_arg> group) const {
        const std::string_view t = tenant.get(), g = group.get();
        c_error err;
        int has = 0;
        std::uint64_t d = 0;
        detail::check(mooncake_meta_group_retention_deadline(p_, t.data(), t.size(), g.data(),
                                                             g.size(), &has, &d, err.out()),
                      err);
        if (!has) return std::nullopt;
        return d;
    }

    // -- soft pin -----------------------------------------------------------

    /// The committed soft-pin deadline (ms since the epoch; possibly expired
    /// until normalised), or nullopt. Grants no lease.
    std::optional<std::uint64_t> soft_pin_deadline(key k) const {
        c_error err;
        int has = 0;
        std::uint64_t d = 0;
        detail::check(mooncake_meta_soft_pin_deadline(p_, k.tenant.data(), k.tenant.size(),
                                                      k.name.data(), k.name.size(), &has, &d,
                                                      err.out()),
                      err);
        if (!has) return std::nullopt;
        return d;
    }
    /// Whether the write in flight carries a soft-pin intent that can commit.
    bool has_pending_soft_pin(key k) const {
        c_error err;
        int out = 0;
        detail::check(mooncake_meta_has_pending_soft_pin(p_, k.tenant.data(), k.tenant.size(),
                                                         k.name.data(), k.name.size(), &out,
                                                         err.out()),
                      err);
        return out != 0;
    }
    /// The deadline index's heap and live sizes, read together.
    deadline_index_sizes index_sizes() const {
        c_error err;
        deadline_index_sizes s;
        detail::check(mooncake_meta_index_sizes(p_, &s.heap, &s.live, err.out()), err);
        return s;
    }
    /// Checks every invariant (INTERNAL_ERROR on a violation); for tests.
    void check_invariants() const {
        c_error err;
        detail::check(mooncake_meta_check_invariants(p_, err.out()), err);
    }

    // -- maintenance --------------------------------------------------------

    /// One soft-pin cleanup cycle at the clock's now.
    cleanup_stats run_cleanup() const {
        c_error err;
        auto s = detail::sized<cleanup_stats>();
        detail::check(mooncake_meta_run_cleanup(p_, &s, err.out()), err);
        return s;
    }
    /// One cleanup cycle treating `at_ms` as now.
    cleanup_stats run_cleanup_at(std::uint64_t at_ms) const {
        c_error err;
        auto s = detail::sized<cleanup_stats>();
        detail::check(mooncake_meta_run_cleanup_at(p_, at_ms, &s, err.out()), err);
        return s;
    }
    /// One eviction run with explicit target and lowerbound fractions.
    eviction_report run_eviction(double target, double lowerbound) const {
        c_error err;
        auto r = detail::sized<eviction_report>();
        detail::check(mooncake_meta_run_eviction(p_, target, lowerbound, &r, err.out()), err);
        return r;
    }
    /// The eviction trigger; the report when a run happened, else nullopt.
    std::optional<eviction_report> evict_if_needed(bool force = false) const {
        c_error err;
        int ran = 0;
        auto r = detail::sized<eviction_report>();
        detail::check(mooncake_meta_evict_if_needed(p_, force ? 1 : 0, &ran, &r, err.out()), err);
        if (!ran) return std::nullopt;
        return r;
    }
    /// Every maintenance task once, at the clock's now.
    void run_maintenance_tick() const {
        c_error err;
        detail::check(mooncake_meta_run_maintenance_tick(p_, err.out()), err);
    }
    /// Sweeps the writes stale at `at_ms`; returns how many.
    std::uint64_t sweep_stale_writes_at(std::uint64_t at_ms) const {
        c_error err;
        std::uint64_t n = 0;
        detail::check(mooncake_meta_sweep_stale_writes_at(p_, at_ms, &n, err.out()), err);
        return n;
    }
    /// Frees the discarded buffers due at `at_ms`; returns how many.
    std::uint64_t release_discarded_at(std::uint64_t at_ms) const {
        c_error err;
        std::uint64_t n = 0;
        detail::check(mooncake_meta_release_discarded_at(p_, at_ms, &n, err.out()), err);
        return n;
    }

    // -- metrics ------------------------------------------------------------

    metrics_snapshot metrics() const {
        c_error err;
        auto s = detail::sized<metrics_snapshot>();
        detail::check(mooncake_meta_metrics(p_, &s, err.out()), err);
        return s;
    }
    /// The Prometheus text in a library buffer (mooncake_meta_metrics_prometheus).
    bytes metrics_prometheus() const {
        c_error err;
        mooncake_meta_bytes *b = nullptr;
        detail::check(mooncake_meta_metrics_prometheus(p_, &b, err.out()), err);
        return bytes(b);
    }
    /// The Prometheus text copied into a std::string
    /// (mooncake_meta_metrics_prometheus_into, retried as it grows).
    std::string metrics_prometheus_text() const {
        return read_growing<std::string>([this](char *buf, std::size_t cap, std::size_t *len,
                                                mooncake_meta_error **err) {
            return mooncake_meta_metrics_prometheus_into(p_, buf, cap, len, err);
        });
    }

    // -- snapshots ----------------------------------------------------------

    /// A snapshot in a library buffer (mooncake_meta_snapshot).
    bytes snapshot() const {
        c_error err;
        mooncake_meta_bytes *b = nullptr;
        detail::check(mooncake_meta_snapshot(p_, &b, err.out()), err);
        return bytes(b);
    }
    /// A snapshot copied into a vector (mooncake_meta_snapshot_into, retried
    /// as it grows).
    std::vector<std::uint8_t> snapshot_vector() const {
        return read_growing<std::vector<std::uint8_t>>(
            [this](std::uint8_t *buf, std::size_t cap, std::size_t *len,
                   mooncake_meta_error **err) {
                return mooncake_meta_snapshot_into(p_, buf, cap, len, err);
            });
    }
    /// Saves a snapshot to `path` atomically (mooncake_meta_snapshot_save:
    /// a symbolic link's target is replaced; anything there but a regular
    /// file is refused; a replaced file's owner, group and rwx bits carry
    /// over where the process may set them, a new file is 0600 less the
    /// umask).
    void snapshot_save(detail::text<detail::path_arg> path) const {
        const std::string p = detail::c_string(path.get(), "snapshot_save path");
        c_error err;
        detail::check(mooncake_meta_snapshot_save(p_, p.c_str(), err.out()), err);
    }
    /// Replaces the whole state from one snapshot: a byte_view, or a bytes
    /// or vector, a temporary included (`r.restore(m.snapshot())`).
    restore_report restore(const byte_arg &snapshot) const {
        c_error err;
        auto r = detail::sized<restore_report>();
        detail::check(
            mooncake_meta_restore(p_, snapshot.data(), snapshot.size(), &r, err.out()), err);
        return r;
    }
    /// Restores the newest candidate that validates; report.candidate says
    /// which. `candidates` is a container of byte_view, bytes, vectors or
    /// byte_arg (`std::vector<mm::byte_arg>` keeps snapshots taken over), or
    /// a braced list of them, temporaries included:
    /// `r.restore_candidates({m.snapshot(), saved})`.
    template <class Range> restore_report restore_candidates(const Range &candidates) const {
        // An element made on the fly (a view yielding values) would be
        // freed before the call reads it.
        static_assert(std::is_lvalue_reference<decltype(*std::begin(candidates))>::value,
                      "restore_candidates: the range must hold its elements");
        std::vector<byte_view> views;
        for (const auto &c : candidates) views.push_back(c);
        return restore_candidates_(views);
    }
    restore_report restore_candidates(std::initializer_list<byte_arg> candidates) const {
        std::vector<byte_view> views;
        views.reserve(candidates.size());
        for (const byte_arg &c : candidates) views.push_back(c);
        return restore_candidates_(views);
    }
    /// restore_candidates from snapshot files.
    template <class Range> restore_report restore_files(const Range &paths) const {
        return restore_files_(detail::c_strings(paths, "restore_files paths"));
    }
    restore_report
    restore_files(std::initializer_list<detail::text<detail::name_arg>> paths) const {
        return restore_files_(detail::c_strings(paths, "restore_files paths"));
    }

    // -- change journal and standby -------------------------------------------

    /// One batch of journal records from `from_seq` into `buf`
    /// (mooncake_meta_journal_read): as many as fit; returns the bytes
    /// written and sets `next_seq`. A buffer too small for the first record
    /// throws MOONCAKE_META_BUFFER_TOO_SMALL, whose message says how many
    /// bytes every record held from `from_seq` needs (buf untouched);
    /// journal_vector sizes its own buffer instead.
    std::size_t journal_read(std::uint64_t from_seq, std::uint8_t *buf, std::size_t cap,
                             std::uint64_t &next_seq) const {
        c_error err;
        std::size_t len = 0;
        const std::int32_t st =
            mooncake_meta_journal_read(p_, from_seq, buf, cap, &len, &next_seq, err.out());
        // The library's message points to *out_len, which a C++ caller
        // cannot see: this one states the length.
        if (st == MOONCAKE_META_BUFFER_TOO_SMALL && len > cap)
            throw error(st, "mooncake_meta.hpp: journal_read: the buffer of " +
                                std::to_string(cap) + " bytes is below the " +
                                std::to_string(len) + " bytes the records from sequence " +
                                std::to_string(from_seq) +
                                " need (journal_vector sizes its own buffer)");
        detail::check(st, err);
        return len;
    }
    /// Every record held from `from_seq`, as one batch in a vector (empty
    /// when nothing was recorded after it); `next_seq` is where to go on.
    std::vector<std::uint8_t> journal_vector(std::uint64_t from_seq,
                                             std::uint64_t &next_seq) const {
        return read_growing<std::vector<std::uint8_t>>(
            [this, from_seq, &next_seq](std::uint8_t *buf, std::size_t cap, std::size_t *len,
                                        mooncake_meta_error **err) {
                return mooncake_meta_journal_read(p_, from_seq, buf, cap, len, &next_seq, err);
            });
    }
    /// Frees the records up to `upto` (stored by the consumer); returns how
    /// many were freed.
    std::uint64_t journal_release(std::uint64_t upto) const {
        c_error err;
        std::uint64_t freed = 0;
        detail::check(mooncake_meta_journal_release(p_, upto, &freed, err.out()), err);
        return freed;
    }
    /// The journal's counters.
    journal_stats journal_counters() const {
        c_error err;
        auto s = detail::sized<journal_stats>();
        detail::check(mooncake_meta_journal_counters(p_, &s, err.out()), err);
        return s;
    }
    /// Applies journal bytes to this standby: a byte_view, or a vector (or
    /// bytes), a temporary included:
    /// `s.journal_apply(p.journal_vector(from, next))`.
    apply_report journal_apply(const byte_arg &records) const {
        c_error err;
        auto r = detail::sized<apply_report>();
        detail::check(
            mooncake_meta_journal_apply(p_, records.data(), records.size(), &r, err.out()), err);
        return r;
    }
    /// Promotes this standby to primary.
    promote_report promote() const {
        c_error err;
        auto r = detail::sized<promote_report>();
        detail::check(mooncake_meta_promote(p_, &r, err.out()), err);
        return r;
    }
    /// Whether this master is a standby.
    bool is_standby() const {
        c_error err;
        int standby = 0;
        detail::check(mooncake_meta_standby_state(p_, &standby, nullptr, err.out()), err);
        return standby != 0;
    }
    /// The last journal sequence this master applied (a standby) or applied
    /// before its promotion.
    std::uint64_t applied_seq() const {
        c_error err;
        int standby = 0;
        std::uint64_t seq = 0;
        detail::check(mooncake_meta_standby_state(p_, &standby, &seq, err.out()), err);
        return seq;
    }

private:
    void create(const mooncake_meta_config *cfg) {
        c_error err;
        detail::check(mooncake_meta_master_new(cfg, &p_, err.out()), err);
        check_output_sizes();
    }

    // The linked library must fill every field of the size-versioned
    // structs this header reads: one older than the header, with the same
    // ABI major, fills only the fields it has and leaves the newer ones 0
    // (a standby would read as a primary, the journal's figures as 0). The
    // metrics struct's fields were appended last (the restore report's
    // clock shift came with its clock skew), so a library that fills it
    // fills them all. Fails as go/master.go's checkOutputSizes does; the
    // master is freed first (a constructor that throws runs no destructor).
    void check_output_sizes() {
        c_error err;
        auto s = detail::sized<metrics_snapshot>();
        const std::int32_t st = mooncake_meta_metrics(p_, &s, err.out());
        if (st == MOONCAKE_META_OK && s.struct_size >= sizeof s) return;
        mooncake_meta_master_free(std::exchange(p_, nullptr));
        if (st != MOONCAKE_META_OK) throw detail::make_error(st, err);
        throw error(MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED,
                    "mooncake_meta.hpp: the linked libmooncake_meta (version " +
                        std::string(mooncake_meta_version()) + ") fills " +
                        std::to_string(s.struct_size) + " of the " + std::to_string(sizeof s) +
                        " bytes of mooncake_meta_metrics_snapshot: it is older than this header");
    }

    // A first Start buffer: the replicas requested when that is small (the
    // library validates the request before it reports the count it needs).
    static std::size_t initial_cap(const mooncake_meta_write_config &c) noexcept {
        std::uint64_t n = std::uint64_t{c.memory_replicas} + c.nof_ssd_replicas;
        return n == 0 ? 1 : n > 16 ? 16 : static_cast<std::size_t>(n);
    }
    static std::size_t initial_cap(const mooncake_meta_replicate_config &c) noexcept {
        return c.replica_num == 0 ? 1 : c.replica_num > 16 ? 16 : c.replica_num;
    }
    // Text and snapshots may grow between calls: some headroom, no overflow.
    static std::size_t grow(std::size_t len) noexcept {
        return len > std::numeric_limits<std::size_t>::max() - 256 - len / 8 ? len
                                                                              : len + len / 8 + 256;
    }
    // The caller-buffer convention for content that may grow between two
    // calls (text, snapshots, journal records): `read(data, cap, &len, err)`
    // is called again, with some headroom, while it reports
    // BUFFER_TOO_SMALL; then the content is returned.
    template <class Buf, class F> static Buf read_growing(F read) {
        Buf buf;
        for (;;) {
            c_error err;
            std::size_t len = 0;
            std::int32_t st = read(buf.empty() ? nullptr : &buf[0], buf.size(), &len, err.out());
            if (st == MOONCAKE_META_BUFFER_TOO_SMALL && len > buf.size()) {
                buf.resize(grow(len));
                continue;
            }
            detail::check(st, err);
            buf.resize(len);
            return buf;
        }
    }

    template <class F> write_result start(std::size_t cap, F call) const {
        std::vector<replica> buf(cap);
        for (;;) {
            c_error err;
            std::size_t len = 0;
            std::uint64_t token = 0;
            std::int32_t st = call(buf.data(), buf.size(), &len, &token, err.out());
            // The request needs more room (more replicas requested, or an
            // in-place upsert of an object copies made larger): the library
            // did nothing and said how many.
            if (st == MOONCAKE_META_BUFFER_TOO_SMALL && len > buf.size()) {
                buf.resize(len);
                continue;
            }
            detail::check(st, err);
            buf.resize(len);
            return write_result{std::move(buf), token};
        }
    }

    template <class F>
    void end(F f, std::uint64_t client, const key &k, selector sel, std::uint64_t token) const {
        c_error err;
        detail::check(f(p_, client, k.tenant.data(), k.tenant.size(), k.name.data(), k.name.size(),
                        static_cast<std::uint32_t>(sel), token, err.out()),
                      err);
    }

    template <class F> void task(F f, const key &k) const {
        c_error err;
        detail::check(
            f(p_, k.tenant.data(), k.tenant.size(), k.name.data(), k.name.size(), err.out()), err);
    }

    std::vector<replica> copy_start_(const key &k, const detail::c_strings &segs) const {
        std::vector<replica> out(segs.size());
        c_error err;
        std::size_t len = 0;
        detail::check(mooncake_meta_copy_start(p_, k.tenant.data(), k.tenant.size(), k.name.data(),
                                               k.name.size(), segs.data(), segs.size(),
                                               out.empty() ? nullptr : out.data(), out.size(), &len,
                                               err.out()),
                      err);
        out.resize(len);
        return out;
    }

    replica promotion_start_(const key &k, const detail::c_strings &preferred) const {
        c_error err;
        replica r{};
        detail::check(mooncake_meta_promotion_start(p_, k.tenant.data(), k.tenant.size(),
                                                    k.name.data(), k.name.size(), preferred.data(),
                                                    preferred.size(), &r, err.out()),
                      err);
        return r;
    }

    restore_report restore_candidates_(const std::vector<byte_view> &candidates) const {
        std::vector<const std::uint8_t *> datas;
        std::vector<std::size_t> lens;
        datas.reserve(candidates.size());
        lens.reserve(candidates.size());
        for (const byte_view &c : candidates) {
            datas.push_back(c.data);
            lens.push_back(c.size);
        }
        c_error err;
        auto r = detail::sized<restore_report>();
        detail::check(mooncake_meta_restore_candidates(p_, datas.empty() ? nullptr : datas.data(),
                                                       lens.empty() ? nullptr : lens.data(),
                                                       candidates.size(), &r, err.out()),
                      err);
        return r;
    }

    restore_report restore_files_(const detail::c_strings &paths) const {
        c_error err;
        auto r = detail::sized<restore_report>();
        detail::check(
            mooncake_meta_restore_files(p_, paths.data(), paths.size(), &r, err.out()), err);
        return r;
    }

    batch_start_result batch_start(bool upsert, std::uint64_t client,
                                   const detail::text<detail::tenant_arg> &tenant,
                                   const detail::key_array &ka,
                                   const std::vector<std::uint64_t> &sizes,
                                   const write_config &cfg) const {
        const char *fn = upsert ? "batch_upsert_start" : "batch_put_start";
        const std::size_t n = ka.size();
        const mooncake_meta_write_config c = cfg.c_config();
        // A replica count the library refuses sizes nothing: the call goes
        // with no room, and the library refuses every key with its own code
        // and message (room for the count asked would be allocated first).
        const bool refused = c.memory_replicas > MOONCAKE_META_MAX_REPLICAS_PER_POOL ||
                             c.nof_ssd_replicas > MOONCAKE_META_MAX_REPLICAS_PER_POOL;
        const std::uint64_t stride64 =
            refused ? 0 : std::uint64_t{c.memory_replicas} + c.nof_ssd_replicas;
        batch_start_result r;
        // What this header refuses before the call: every key gets the
        // code, no replica and no token, as when the library refuses.
        std::int32_t code = MOONCAKE_META_NULL_ARGUMENT;
        std::string why;
        if (tenant.null()) {
            why = "tenant is NULL";
        } else if (ka.null_at() != detail::key_array::none) {
            why = detail::element("keys", ka.null_at()) + " is NULL";
        } else if (sizes.size() != n) {
            code = MOONCAKE_META_INVALID_PARAMS;
            why = std::to_string(sizes.size()) + " sizes for " + std::to_string(n) + " keys";
        } else if (stride64 > std::numeric_limits<std::size_t>::max() ||
                   (n != 0 && stride64 > std::vector<replica>().max_size() / n)) {
            code = MOONCAKE_META_INVALID_PARAMS;
            why = std::to_string(n) + " keys of " + std::to_string(stride64) +
                  " replicas each do not fit in memory";
        }
        if (!why.empty()) {
            r.replicas.resize(n);
            r.tokens.assign(n, std::uint64_t{0});
            detail::refuse(r, n, code, "mooncake_meta.hpp: " + std::string(fn) + ": " + why);
            return r;
        }
        const std::string_view t = tenant.get();
        const std::size_t stride = static_cast<std::size_t>(stride64);
        std::vector<replica> flat(n * stride);
        std::vector<std::size_t> counts(n);
        // Everything the result needs is allocated before the C call: once
        // it has staged writes, their tokens live only in `r`, and an
        // exception (an allocation failure) would drop them, leaving the keys
        // held by writes nobody can end until the stale-write sweep. From the
        // call on nothing here throws.
        r.tokens.resize(n);
        r.statuses.resize(n);
        r.replicas.resize(n);
        for (std::vector<replica> &v : r.replicas) v.reserve(stride);
        r.message.reserve(detail::message_room);
        c_error err;
        auto f = upsert ? mooncake_meta_batch_upsert_start : mooncake_meta_batch_put_start;
        r.status = f(p_, client, t.data(), t.size(), ka.ptrs(), ka.lens(), n,
                     sizes.empty() ? nullptr : sizes.data(), &c, flat.empty() ? nullptr : flat.data(),
                     flat.size(), counts.data(), r.tokens.data(), r.statuses.data(), err.out());
        detail::settle_statuses(r);
        bool retried = false;
        for (std::size_t i = 0; i < n; i++) {
            if (r.statuses[i] == MOONCAKE_META_OK) {
                // Within the room reserved above: no allocation.
                auto first = flat.begin() + static_cast<std::ptrdiff_t>(i * stride);
                r.replicas[i].assign(
                    first, first + static_cast<std::ptrdiff_t>(std::min(counts[i], stride)));
                continue;
            }
            // A failed key has no replicas and no token (after a PANIC the
            // call may have left one).
            r.replicas[i] = std::vector<replica>();
            r.tokens[i] = 0;
            if (upsert && r.statuses[i] == MOONCAKE_META_BUFFER_TOO_SMALL && counts[i] > stride) {
                // An in-place upsert with more replicas than `stride`: only
                // that key failed, and nothing was done to it.
                retried = true;
                try {
                    const key k(t, std::string_view(ka.ptrs()[i], ka.lens()[i]));
                    write_result w = upsert_start(client, k, sizes[i], cfg);
                    r.replicas[i] = std::move(w.replicas);
                    r.tokens[i] = w.token;
                    r.statuses[i] = MOONCAKE_META_OK;
                } catch (const error &e) {
                    r.statuses[i] = e.code();
                } catch (...) {
                    // Only an allocation failure gets here, and
                    // upsert_start allocates only before its write or after
                    // a failed one: this key is not written, and the other
                    // keys keep their tokens.
                    r.statuses[i] = MOONCAKE_META_INTERNAL_ERROR;
                }
            }
        }
        if (!retried) {
            detail::library_message(r, err);
            return r;
        }
        r.status = MOONCAKE_META_OK;
        std::size_t failed = 0;
        for (std::size_t i = 0; i < n; i++) {
            if (r.statuses[i] == MOONCAKE_META_OK) continue;
            if (failed++ == 0) r.status = r.statuses[i];
        }
        if (failed != 0)
            detail::set_message(r.message, r.status, [&] {
                return "batch_upsert_start: " + std::to_string(failed) + " of " +
                       std::to_string(n) + " keys failed, the first with " + status_name(r.status);
            });
        return r;
    }

    template <class F>
    batch_status batch_end(F f, const char *fn, std::uint64_t client,
                           const detail::text<detail::tenant_arg> &tenant,
                           const detail::key_array &ka, selector sel,
                           const std::vector<std::uint64_t> &tokens) const {
        batch_status r;
        if (detail::refuse_null(r, fn, tenant, ka, "keys")) return r;
        if (!tokens.empty() && tokens.size() != ka.size()) {
            detail::refuse(r, ka.size(), MOONCAKE_META_INVALID_PARAMS,
                           "mooncake_meta.hpp: " + std::string(fn) + ": " +
                               std::to_string(tokens.size()) + " tokens for " +
                               std::to_string(ka.size()) + " keys");
            return r;
        }
        const std::string_view t = tenant.get();
        r.statuses.resize(ka.size());
        c_error err;
        r.status = f(p_, client, t.data(), t.size(), ka.ptrs(), ka.lens(), ka.size(),
                     static_cast<std::uint32_t>(sel), tokens.empty() ? nullptr : tokens.data(),
                     r.statuses.data(), err.out());
        detail::finish_batch(r, err);
        return r;
    }

    mooncake_meta_master *p_ = nullptr;
};

} // namespace mooncake_meta

#endif // MOONCAKE_META_HPP
