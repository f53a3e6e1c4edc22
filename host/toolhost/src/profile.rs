//! The Pi profile (issue 41): which release of Pi the model's texts and
//! result shapes follow. One pipeline serves every profile; a profile only
//! selects texts and shapes from tables (the validator's messages, the
//! built-ins' notices, whether a failed command is thrown or returned).
//! The built-in components read it through the package's `host-info`
//! interface.

use std::fmt;
use std::str::FromStr;

/// A release of Pi whose model-facing behaviour toolhost reproduces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PiProfile {
    /// Pi 0.85: the seeds' contract (`docs/spec.md`), the default.
    #[default]
    V0_85,
    /// Pi 1.6 (`docs/pi-1.6.md`, recorded in `tests/fixtures/pi-1.6/`).
    V1_6,
}

impl PiProfile {
    /// Every profile, oldest first.
    pub const ALL: [PiProfile; 2] = [PiProfile::V0_85, PiProfile::V1_6];

    /// How it is written on the command line, in `toolhost.toml` and to
    /// components: `0.85`, `1.6`.
    pub fn as_str(self) -> &'static str {
        match self {
            PiProfile::V0_85 => "0.85",
            PiProfile::V1_6 => "1.6",
        }
    }

    /// Whether this profile is Pi 1.5 or later (pi-schema's validation
    /// texts, returned tool errors, clamped limits).
    pub fn since_1_5(self) -> bool {
        self >= PiProfile::V1_6
    }
}

impl PartialOrd for PiProfile {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for PiProfile {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (*self as u8).cmp(&(*other as u8))
    }
}

impl fmt::Display for PiProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PiProfile {
    type Err = String;

    /// `0.85` or `1.6`, with or without a patch number (`1.6.0`): a Pi
    /// release's texts do not change within its minor version.
    fn from_str(text: &str) -> Result<Self, String> {
        let minor = match text.trim().split('.').collect::<Vec<_>>()[..] {
            [major, minor] | [major, minor, _] => format!("{major}.{minor}"),
            _ => String::new(),
        };
        PiProfile::ALL
            .into_iter()
            .find(|p| p.as_str() == minor)
            .ok_or_else(|| {
                format!(
                    "unknown Pi profile {text:?}: toolhost reproduces Pi {}",
                    PiProfile::ALL.map(|p| p.as_str()).join(" and ")
                )
            })
    }
}

impl serde::Serialize for PiProfile {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for PiProfile {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_is_named_by_its_minor_release_and_nothing_else_parses() {
        assert_eq!("0.85".parse(), Ok(PiProfile::V0_85));
        assert_eq!("1.6".parse(), Ok(PiProfile::V1_6));
        assert_eq!("1.6.0".parse(), Ok(PiProfile::V1_6));
        assert_eq!(" 0.85.0 ".parse(), Ok(PiProfile::V0_85));
        for bad in ["", "1", "1.5", "0.85.0.1", "v1.6", "1.6.x.y", "latest"] {
            let err = bad.parse::<PiProfile>().unwrap_err();
            assert!(err.contains("reproduces Pi 0.85 and 1.6"), "{bad}: {err}");
        }
        assert!(PiProfile::V1_6.since_1_5() && !PiProfile::V0_85.since_1_5());
        assert_eq!(PiProfile::default(), PiProfile::V0_85);
    }
}
