//! Bearer tokens the supervisor accepts, stored as SHA-256 digests.
//!
//! A token entry has a name (what logs and the session's identity show) and
//! the SHA-256 of the secret in hex; the secret itself is never stored,
//! logged or printed. A presented token is hashed and compared with every
//! entry in constant time, so neither the time taken nor the order of the
//! entries tells an attacker how close a guess came.
//!
//! Until the mediator's config file names them (`[[tenant]] tokens`), they
//! come from `--tokens FILE`: one `NAME SHA256HEX` per line, `#` comments
//! and blank lines skipped. `printf %s "$SECRET" | sha256sum` gives the hex.

use std::path::Path;

use vgpu_transport::tls::BearerToken;

use crate::MediatorError;

/// One accepted token: its name and the digest of its secret.
#[derive(Clone, PartialEq, Eq)]
pub struct TokenEntry {
    pub name: String,
    pub sha256: [u8; 32],
}

impl std::fmt::Debug for TokenEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TokenEntry {{ name: {:?}, sha256: .. }}", self.name)
    }
}

/// The accepted tokens.
#[derive(Clone, Debug, Default)]
pub struct Tokens {
    entries: Vec<TokenEntry>,
}

/// Parses 64 hex digits.
pub fn parse_sha256(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.as_bytes();
    if hex.len() != 64 {
        return None;
    }
    let digit = |c: u8| {
        char::from(c)
            .to_digit(16)
            .and_then(|d| u8::try_from(d).ok())
    };
    let mut out = [0u8; 32];
    for (i, pair) in hex.chunks_exact(2).enumerate() {
        out[i] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

/// Whether two digests are equal, in time that does not depend on where
/// they differ.
fn same_digest(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

impl Tokens {
    /// Tokens from entries (the config file's, once it names them).
    pub fn new(entries: Vec<TokenEntry>) -> Tokens {
        Tokens { entries }
    }

    /// Reads a `--tokens` file; an error names the file and line.
    pub fn load(path: &Path) -> Result<Tokens, MediatorError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| MediatorError::Config(format!("--tokens {}: {e}", path.display())))?;
        Tokens::parse(&text).map_err(|(line, why)| {
            MediatorError::Config(format!("--tokens {}:{line}: {why}", path.display()))
        })
    }

    /// Parses the text of a tokens file; an error is `(line, reason)`.
    pub fn parse(text: &str) -> Result<Tokens, (usize, String)> {
        let mut entries: Vec<TokenEntry> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut words = line.split_whitespace();
            let (Some(name), Some(hex), None) = (words.next(), words.next(), words.next()) else {
                return Err((i + 1, "expected NAME SHA256HEX".into()));
            };
            let sha256 = parse_sha256(hex)
                .ok_or_else(|| (i + 1, "the digest is not 64 hex digits".to_owned()))?;
            if entries.iter().any(|e| e.name == name) {
                return Err((i + 1, format!("token name {name:?} appears twice")));
            }
            entries.push(TokenEntry {
                name: name.to_owned(),
                sha256,
            });
        }
        Ok(Tokens { entries })
    }

    /// Accepts the tokens of `more` too.
    pub fn extend(&mut self, more: impl IntoIterator<Item = TokenEntry>) {
        self.entries.extend(more);
    }

    /// Whether no token is accepted.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The name of the entry whose digest matches `token`'s, if any. Every
    /// entry is compared, whatever matched.
    pub fn check(&self, token: &BearerToken) -> Option<&str> {
        let digest = ring::digest::digest(&ring::digest::SHA256, token.expose());
        let mut presented = [0u8; 32];
        presented.copy_from_slice(digest.as_ref());
        let mut found = None;
        for e in &self.entries {
            if same_digest(&e.sha256, &presented) {
                found = Some(e.name.as_str());
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A well-formed digest (64 hex digits) for the parser tests.
    const ALPHA: &str = "4f7c0fd6c29f3a5fd0b00b38fe6c5fbcb4b81b6a4ac6cf3b0f5e1d0f0a4b6a01";

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn tokens_match_by_digest_and_name_their_entry() {
        let sha = |s: &str| hex(ring::digest::digest(&ring::digest::SHA256, s.as_bytes()).as_ref());
        let text = format!(
            "# name digest\n\nalpha {}\n  beta   {}  \n",
            sha("alpha-secret"),
            sha("beta-secret").to_uppercase()
        );
        let tokens = Tokens::parse(&text).expect("parse");
        let t = |s: &str| BearerToken::new(s).expect("a token");
        assert_eq!(tokens.check(&t("alpha-secret")), Some("alpha"));
        assert_eq!(tokens.check(&t("beta-secret")), Some("beta"));
        assert_eq!(tokens.check(&t("alpha-secreT")), None);
        assert_eq!(
            tokens.check(&t(&sha("alpha-secret"))),
            None,
            "the digest is no token"
        );
        assert!(!format!("{tokens:?}").contains(&sha("alpha-secret")));
    }

    #[test]
    fn bad_files_name_the_line() {
        for (text, line) in [
            ("a\n", 1),
            ("# c\na b c\n", 2),
            (&format!("a {ALPHA}\nb {}\n", &ALPHA[1..]) as &str, 2),
            (&format!("a {ALPHA}\na {ALPHA}\n"), 2),
            ("a zz\n", 1),
        ] {
            assert_eq!(
                Tokens::parse(text).map(|_| ()).expect_err(text).0,
                line,
                "{text:?}"
            );
        }
        assert!(Tokens::parse("").expect("empty").is_empty());
    }

    #[test]
    fn digests_compare_whole() {
        let a = parse_sha256(ALPHA).expect("hex");
        let mut b = a;
        assert!(same_digest(&a, &b));
        b[31] ^= 1;
        assert!(!same_digest(&a, &b));
        assert_eq!(parse_sha256(&ALPHA.replace('4', "g")), None);
    }
}
