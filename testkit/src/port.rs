//! Loopback ports: one free a moment ago, for a node to bind (or for a URL nobody answers on).

/// A loopback port that was free a moment ago (nobody listens on it: also a node that is down).
///
/// # Panics
/// If no loopback port can be bound.
pub fn free_port() -> u16 {
    try_free_port().expect("bind 127.0.0.1:0")
}

/// [`free_port`], with the error when no loopback port can be bound.
pub fn try_free_port() -> std::io::Result<u16> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
}

/// `redis://127.0.0.1:<free port>`: a node that is down.
pub fn dead_url() -> String {
    format!("redis://127.0.0.1:{}", free_port())
}
