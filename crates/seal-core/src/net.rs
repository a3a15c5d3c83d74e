//! Network words shared by the configuration and the store: which hosts are on this machine.

/// True for endpoints on this machine: the only ones allowed over plain http.
pub fn is_loopback_host(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h == "localhost"
        || h.parse::<std::net::IpAddr>()
            .map(|ip| ip.is_loopback())
            .unwrap_or(false)
}
