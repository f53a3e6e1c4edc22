//! The host's Pi profile (the `host-info` interface, always linked): the
//! release of Pi whose model-facing texts and result shapes a tool that
//! mirrors one of Pi's tools follows.

/// A release of Pi whose texts the host serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Profile {
    /// Pi 0.85, the host's default.
    V0_85,
    /// Pi 1.6.
    V1_6,
}

impl Profile {
    /// Pi 1.5 or later: pi-schema's validation, returned tool errors,
    /// limits below 1 read as 1.
    pub fn since_1_5(self) -> bool {
        self >= Profile::V1_6
    }

    /// The profile named `text`; one this SDK does not know is read as the
    /// newest it does (profiles only come later).
    pub fn named(text: &str) -> Profile {
        match text {
            "0.85" => Profile::V0_85,
            _ => Profile::V1_6,
        }
    }
}

/// Of a tool's rules for each profile, the host's profile's.
pub fn of<T: ?Sized>(v0_85: &'static T, v1_6: &'static T) -> &'static T {
    match profile() {
        Profile::V0_85 => v0_85,
        Profile::V1_6 => v1_6,
    }
}

/// The host's profile, asked once per instance (an instance serves one call).
pub fn profile() -> Profile {
    static PROFILE: std::sync::OnceLock<Profile> = std::sync::OnceLock::new();
    *PROFILE
        .get_or_init(|| Profile::named(&crate::bindings::toolhost::tool::host_info::pi_profile()))
}
