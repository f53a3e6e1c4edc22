//! Tests of the `write` built-in(s); see the spec's §1 and §7 decisions.
