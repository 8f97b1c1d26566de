//! The client's TLS settings, read from its environment once.

use std::time::Duration;

use super::{admission, BearerToken, ClientTls};
use crate::{Channel, TransportError};

/// What a client reads from its environment for `tls://` mediators:
/// `VGPU_TLS_CA`, `VGPU_TLS_CERT`, `VGPU_TLS_KEY`, `VGPU_TOKEN` and
/// `VGPU_TOKEN_FILE` (the file is read when the configuration is, at
/// `cuInit`; a token given both ways is an error).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsSettings {
    /// `VGPU_TLS_CA`: the CA file to trust instead of the system's roots.
    pub ca: Option<std::path::PathBuf>,
    /// `VGPU_TLS_CERT`, `VGPU_TLS_KEY`: the client's certificate and key.
    pub cert: Option<std::path::PathBuf>,
    pub key: Option<std::path::PathBuf>,
    /// `VGPU_TOKEN`, or the contents of `VGPU_TOKEN_FILE`.
    pub token: Option<BearerToken>,
    /// Why the token could not be read (reported when a session opens).
    pub token_error: Option<String>,
}

impl TlsSettings {
    /// Takes the environment variable `key` if it is one of the above
    /// (empty values are unset); `false`: it is not.
    pub fn set_from_env(&mut self, key: &str, value: &str) -> bool {
        let path = || (!value.is_empty()).then(|| std::path::PathBuf::from(value));
        match key {
            "VGPU_TLS_CA" => self.ca = path(),
            "VGPU_TLS_CERT" => self.cert = path(),
            "VGPU_TLS_KEY" => self.key = path(),
            "VGPU_TOKEN" => self.add_token(BearerToken::new(value), "VGPU_TOKEN"),
            "VGPU_TOKEN_FILE" if !value.is_empty() => match std::fs::read_to_string(value) {
                Ok(text) => self.add_token(BearerToken::new(&text), "VGPU_TOKEN_FILE"),
                // The error names the file, never its contents.
                Err(e) => self.token_error = Some(format!("VGPU_TOKEN_FILE={value}: {e}")),
            },
            "VGPU_TOKEN_FILE" => {}
            _ => return false,
        }
        true
    }

    fn add_token(&mut self, token: Option<BearerToken>, from: &str) {
        let Some(token) = token else { return };
        if self.token.is_some() {
            self.token_error = Some(format!(
                "a token is given twice ({from} and another of VGPU_TOKEN, VGPU_TOKEN_FILE)"
            ));
        }
        self.token = Some(token);
    }

    /// The client's TLS settings; a certificate without its key (or the
    /// reverse) is an error.
    pub fn client(&self) -> Result<ClientTls, TransportError> {
        let identity = match (&self.cert, &self.key) {
            (Some(c), Some(k)) => Some((c.as_path(), k.as_path())),
            (None, None) => None,
            _ => {
                return Err(TransportError::Tls(
                    "VGPU_TLS_CERT and VGPU_TLS_KEY go together".into(),
                ))
            }
        };
        ClientTls::new(self.ca.as_deref(), identity)
    }

    /// The bearer token to present, if any.
    pub fn bearer(&self) -> Result<Option<&BearerToken>, TransportError> {
        match &self.token_error {
            Some(e) => Err(TransportError::Tls(e.clone())),
            None => Ok(self.token.as_ref()),
        }
    }

    /// Opens a session with the mediator at `tls://host:port` with these
    /// settings ([`admission::open_session`]).
    pub fn open_session(
        &self,
        host: &str,
        port: u16,
        timeout: Duration,
    ) -> Result<Channel, TransportError> {
        admission::open_session(host, port, &self.client()?, self.bearer()?, timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_come_from_the_environment_or_a_file_and_never_print() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("token");
        std::fs::write(&file, "  from-a-file\n").expect("write");
        let file = file.to_str().expect("utf-8");
        let mut s = TlsSettings::default();
        assert!(s.set_from_env("VGPU_TOKEN_FILE", file));
        assert!(!s.set_from_env("VGPU_OTHER", "x"));
        assert_eq!(
            s.bearer().expect("a token").map(BearerToken::expose),
            Some(&b"from-a-file"[..])
        );
        assert!(!format!("{s:?}").contains("from-a-file"), "{s:?}");
        // Given twice: an error that names neither secret.
        assert!(s.set_from_env("VGPU_TOKEN", "from-the-env"));
        let e = s.bearer().expect_err("twice").to_string();
        assert!(e.contains("twice") && !e.contains("from-"), "{e}");
        // A file that cannot be read is named, and the session fails.
        let mut s = TlsSettings::default();
        s.set_from_env("VGPU_TOKEN_FILE", "/nonexistent/token");
        let e = s.bearer().expect_err("unreadable").to_string();
        assert!(e.contains("/nonexistent/token"), "{e}");
        // Empty values are unset.
        let mut s = TlsSettings::default();
        s.set_from_env("VGPU_TOKEN", "");
        s.set_from_env("VGPU_TLS_CA", "");
        assert_eq!(s, TlsSettings::default());
    }

    #[test]
    fn a_certificate_needs_its_key() {
        let s = TlsSettings {
            cert: Some("/x.pem".into()),
            ..TlsSettings::default()
        };
        let e = s.client().expect_err("no key").to_string();
        assert!(e.contains("VGPU_TLS_CERT and VGPU_TLS_KEY"), "{e}");
    }
}
