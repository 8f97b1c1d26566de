//! The subject common name of an X.509 certificate (DER), read by walking
//! just enough of its structure: `Certificate → tbsCertificate → subject`.
//! The certificates read here were verified by the TLS handshake first;
//! anything malformed is still only `None`, never a panic.

/// The DER encoding of the `commonName` attribute type, 2.5.4.3.
const CN_OID: &[u8] = &[0x55, 0x04, 0x03];

/// One DER element: its tag, its contents, and what follows it.
fn element(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let (bytes, rest) = rest.split_at(n);
        let len = bytes
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        (len, rest)
    };
    if rest.len() < len {
        return None;
    }
    let (contents, after) = rest.split_at(len);
    Some((tag, contents, after))
}

/// The contents of a SEQUENCE (tag 0x30) at the start of `der`, and what follows.
fn sequence(der: &[u8]) -> Option<(&[u8], &[u8])> {
    match element(der)? {
        (0x30, contents, after) => Some((contents, after)),
        _ => None,
    }
}

/// The subject common name of the DER certificate `cert`, if it has one
/// (the first, when there are several).
pub fn common_name(cert: &[u8]) -> Option<String> {
    let (certificate, _) = sequence(cert)?;
    let (tbs, _) = sequence(certificate)?;
    let mut rest = tbs;
    // An explicit version ([0]) comes first when present.
    if rest.first() == Some(&0xa0) {
        rest = element(rest)?.2;
    }
    // serialNumber, signature, issuer, validity, then subject.
    for _ in 0..4 {
        rest = element(rest)?.2;
    }
    let (mut rdns, _) = sequence(rest)?;
    while !rdns.is_empty() {
        let (tag, set, after) = element(rdns)?;
        rdns = after;
        if tag != 0x31 {
            return None;
        }
        let mut attrs = set;
        while !attrs.is_empty() {
            let (attr, after) = sequence(attrs)?;
            attrs = after;
            let (oid_tag, oid, value) = element(attr)?;
            if oid_tag != 0x06 || oid != CN_OID {
                continue;
            }
            // UTF8String, PrintableString, T61String or IA5String.
            return match element(value)? {
                (0x0c | 0x13 | 0x14 | 0x16, text, _) => {
                    std::str::from_utf8(text).ok().map(str::to_owned)
                }
                _ => None,
            };
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A DER element with a short or long length.
    fn der(tag: u8, contents: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        match contents.len() {
            n if n < 0x80 => out.push(u8::try_from(n).expect("short")),
            n => {
                out.push(0x82);
                out.extend_from_slice(&u16::try_from(n).expect("fits").to_be_bytes());
            }
        }
        out.extend_from_slice(contents);
        out
    }

    fn name(attrs: &[(&[u8], &str)]) -> Vec<u8> {
        let mut rdns = Vec::new();
        for (oid, value) in attrs {
            let attr = [der(0x06, oid), der(0x0c, value.as_bytes())].concat();
            rdns.extend(der(0x31, &der(0x30, &attr)));
        }
        der(0x30, &rdns)
    }

    fn certificate(subject: &[u8], version: bool) -> Vec<u8> {
        let mut tbs = Vec::new();
        if version {
            tbs.extend(der(0xa0, &der(0x02, &[2])));
        }
        tbs.extend(der(0x02, &[1, 2, 3]));
        tbs.extend(der(0x30, &der(0x06, &[0x2a, 0x86, 0x48])));
        tbs.extend(name(&[(CN_OID, "Some CA")]));
        tbs.extend(der(0x30, &[0u8; 200]));
        tbs.extend_from_slice(subject);
        der(
            0x30,
            &[der(0x30, &tbs), der(0x30, &[]), der(0x03, &[0])].concat(),
        )
    }

    #[test]
    fn finds_the_subject_common_name_not_the_issuers() {
        let o: &[u8] = &[0x55, 0x04, 0x0a];
        let subject = name(&[(o, "vgpu tests"), (CN_OID, "client-a")]);
        for version in [true, false] {
            let cert = certificate(&subject, version);
            assert_eq!(common_name(&cert).as_deref(), Some("client-a"));
        }
        let nameless = certificate(&name(&[(o, "vgpu tests")]), true);
        assert_eq!(common_name(&nameless), None);
    }

    #[test]
    fn malformed_input_is_none() {
        let cert = certificate(&name(&[(CN_OID, "x")]), true);
        for cut in 0..cert.len() {
            let _ = common_name(&cert[..cut]);
        }
        assert_eq!(common_name(&[]), None);
        assert_eq!(common_name(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]), None);
        assert_eq!(common_name(b"not der at all"), None);
    }
}
