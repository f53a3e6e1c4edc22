//! Which addresses a granted name may not resolve to: loopback, private,
//! link-local and the other special-purpose ranges, and their mapped forms.

use std::net::{IpAddr, Ipv4Addr};

/// Why an address may not be reached through a grant that names a host: a
/// description for messages (`a private address`), or `None` for a public
/// unicast address.
///
/// This is what keeps a granted name from reaching the machine itself, the
/// local network or a cloud metadata service (169.254.169.254) when its DNS
/// answer points there, whether by mistake or by rebinding.
pub fn special(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => {
            // The IPv4 address inside an IPv6 one: IPv4-mapped
            // (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d) and the NAT64
            // well-known prefix (64:ff9b::a.b.c.d) all reach it.
            let s = v6.segments();
            let embedded = v6.to_ipv4_mapped().or_else(|| {
                let v4 =
                    Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
                let compatible = s[..6] == [0; 6] && u32::from(v4) > 1;
                let nat64 = s[..6] == [0x64, 0xff9b, 0, 0, 0, 0];
                (compatible || nat64).then_some(v4)
            });
            if let Some(v4) = embedded {
                return special_v4(v4);
            }
            if v6.is_unspecified() {
                Some("an unspecified address")
            } else if v6.is_loopback() {
                Some("a loopback address")
            } else if s[0] & 0xfe00 == 0xfc00 {
                Some("a private address")
            } else if s[0] & 0xffc0 == 0xfe80 || s[0] & 0xffc0 == 0xfec0 {
                Some("a link-local address")
            } else if v6.is_multicast() {
                Some("a multicast address")
            } else {
                None
            }
        }
    }
}

pub(super) fn special_v4(v4: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = v4.octets();
    if v4.is_loopback() {
        Some("a loopback address")
    } else if v4.is_private() {
        Some("a private address")
    } else if v4.is_link_local() {
        Some("a link-local address")
    } else if a == 0 {
        Some("an unspecified address")
    } else if a == 100 && (64..128).contains(&b) {
        Some("a shared (CGNAT) address")
    } else if v4.is_broadcast() {
        Some("a broadcast address")
    } else if v4.is_multicast() {
        Some("a multicast address")
    } else if a >= 240 {
        Some("a reserved address")
    } else {
        None
    }
}
