//! Every `unsafe fn` of the client says what its caller must guarantee: a
//! `# Safety` section in its doc comment. Clippy's `missing_safety_doc`
//! looks only at the public API, and nearly all of the client is private
//! behind its exports, so this test reads the sources.

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The `unsafe fn`s of `text` before its tests, by line number, whose doc
/// comment (above any attributes) has no `# Safety` heading.
fn undocumented(text: &str) -> Vec<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .iter()
        .position(|l| l.starts_with("#[cfg(test)]"))
        .unwrap_or(lines.len());
    let mut found = Vec::new();
    for (i, line) in lines[..end].iter().enumerate() {
        let code = line.trim_start();
        let declares = code.starts_with("unsafe fn ")
            || code.starts_with("pub unsafe fn ")
            || code.starts_with("pub(crate) unsafe fn ")
            || code.starts_with("pub(super) unsafe fn ");
        if !declares {
            continue;
        }
        let above = lines[..i]
            .iter()
            .rev()
            .map(|l| l.trim_start())
            .skip_while(|l| l.starts_with("#[") || l.starts_with(')') || l.starts_with('#'))
            .take_while(|l| l.starts_with("///"));
        if !above.into_iter().any(|l| l.contains("# Safety")) {
            found.push(i + 1);
        }
    }
    found
}

#[test]
fn every_unsafe_fn_says_what_its_caller_must_guarantee() {
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    let mut missing = Vec::new();
    let mut seen = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).expect("readable source");
        seen += text.matches("unsafe fn ").count();
        for line in undocumented(&text) {
            missing.push(format!("{}:{line}", f.display()));
        }
    }
    assert!(
        seen > 50,
        "the scan found only {seen} unsafe fns: is it reading the sources?"
    );
    assert!(
        missing.is_empty(),
        "unsafe fns without a `# Safety` section:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_scan_finds_a_missing_section() {
    let text = "/// Does a thing.\npub unsafe fn f() {}\n\n/// # Safety\n/// `p` is valid.\n#[allow(x)]\nunsafe fn g() {}\n";
    assert_eq!(undocumented(text), vec![2]);
}
