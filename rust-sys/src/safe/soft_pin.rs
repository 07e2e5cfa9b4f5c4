//! The explicit write intent: `PRESERVE | ENABLE | DISABLE` with an
//! optional request TTL (docs/CONTRACT.md §4.1), as the core
//! crate's `soft_pin` types.

use super::*;

/// What a write does to the object's soft pin when it first becomes
/// readable (`MOONCAKE_META_SOFT_PIN_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum SoftPinAction {
    /// Keep an unexpired committed deadline; an expired one is dropped.
    #[default]
    Preserve = 0,
    /// Start a new lifetime of `ttl` from the End that makes the object readable.
    Enable = 1,
    /// Remove the committed deadline when the write becomes readable.
    Disable = 2,
}

impl SoftPinAction {
    /// Validates a raw action value from foreign code.
    pub fn from_raw(v: u32) -> Result<Self> {
        match v {
            MOONCAKE_META_SOFT_PIN_PRESERVE => Ok(SoftPinAction::Preserve),
            MOONCAKE_META_SOFT_PIN_ENABLE => Ok(SoftPinAction::Enable),
            MOONCAKE_META_SOFT_PIN_DISABLE => Ok(SoftPinAction::Disable),
            other => Err(Error::invalid(format!(
                "soft_pin_action: unknown value {other} (expected 0 = PRESERVE, 1 = ENABLE \
                 or 2 = DISABLE)"
            ))),
        }
    }

    pub(super) fn raw(self) -> u32 {
        match self {
            SoftPinAction::Preserve => MOONCAKE_META_SOFT_PIN_PRESERVE,
            SoftPinAction::Enable => MOONCAKE_META_SOFT_PIN_ENABLE,
            SoftPinAction::Disable => MOONCAKE_META_SOFT_PIN_DISABLE,
        }
    }
}

/// The soft-pin part of a write request, as the caller gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SoftPinRequest {
    pub action: SoftPinAction,
    /// Only with `Enable`; `None` means the master's default TTL.
    pub ttl_ms: Option<u64>,
}

impl SoftPinRequest {
    pub const PRESERVE: SoftPinRequest = SoftPinRequest {
        action: SoftPinAction::Preserve,
        ttl_ms: None,
    };
    pub const DISABLE: SoftPinRequest = SoftPinRequest {
        action: SoftPinAction::Disable,
        ttl_ms: None,
    };

    /// `Enable` with the master's default TTL.
    pub const fn enable() -> Self {
        SoftPinRequest {
            action: SoftPinAction::Enable,
            ttl_ms: None,
        }
    }

    /// `Enable` with an explicit TTL (0 commits ordinary cache).
    pub const fn enable_for(ttl_ms: u64) -> Self {
        SoftPinRequest {
            action: SoftPinAction::Enable,
            ttl_ms: Some(ttl_ms),
        }
    }

    /// The legacy C boolean: true → ENABLE with the master default, false → PRESERVE.
    pub const fn from_legacy(with_soft_pin: bool) -> Self {
        if with_soft_pin {
            Self::enable()
        } else {
            Self::PRESERVE
        }
    }

    /// Validates the request against a master configuration's limits and
    /// resolves the TTL, as a Start does (the same rules and messages as
    /// the core; this one runs in Rust, the library applies the same rules
    /// again at the Start).
    pub fn resolve(&self, config: &MasterConfig) -> Result<SoftPinIntent> {
        match (self.action, self.ttl_ms) {
            (SoftPinAction::Preserve, Some(_)) => {
                Err(Error::invalid("PRESERVE must not carry soft_pin_ttl_ms"))
            }
            (SoftPinAction::Disable, Some(_)) => {
                Err(Error::invalid("DISABLE must not carry soft_pin_ttl_ms"))
            }
            (SoftPinAction::Preserve, None) => Ok(SoftPinIntent::Preserve),
            (SoftPinAction::Disable, None) => Ok(SoftPinIntent::Disable),
            (SoftPinAction::Enable, None) => Ok(SoftPinIntent::Enable {
                ttl_ms: config.default_kv_soft_pin_ttl_ms,
            }),
            (SoftPinAction::Enable, Some(t)) if t > config.max_kv_soft_pin_ttl_ms => {
                Err(Error::invalid(format!(
                    "soft_pin_ttl_ms {t} exceeds max_kv_soft_pin_ttl {}",
                    config.max_kv_soft_pin_ttl_ms
                )))
            }
            (SoftPinAction::Enable, Some(t)) => Ok(SoftPinIntent::Enable { ttl_ms: t }),
        }
    }
}

/// A validated request with its TTL resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SoftPinIntent {
    Preserve,
    Enable { ttl_ms: u64 },
    Disable,
}
