//! Who is at the other end of a connection, as the supervisor established it before a worker starts.
/// What the supervisor knows of a client before its worker starts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Identity {
    /// The peer's uid and gid from SO_PEERCRED (Unix sockets only).
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    /// The peer's pid from SO_PEERCRED (Unix sockets only).
    pub pid: Option<u32>,
    /// The subject common name of a verified client certificate (mTLS).
    pub cert_name: Option<String>,
    /// The bearer token the client presented, once checked by the caller against the configured tokens: the NAME of the matching token entry, never the secret.
    pub token_name: Option<String>,
    /// The peer's network address (TCP/TLS), for logs.
    pub peer: Option<std::net::SocketAddr>,
}
