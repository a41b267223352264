//! `gauntlet serve`: the index, a file, and refused traversals, on 127.0.0.1 only.
use crate::common;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::PathBuf;

fn start(root: PathBuf) -> std::net::SocketAddr {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let addr = listener.local_addr().unwrap();
    assert!(addr.ip().is_loopback());
    std::thread::spawn(move || gauntlet_report::serve::serve(listener, &root));
    addr
}

fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).unwrap();
    let text = String::from_utf8_lossy(&resp).into_owned();
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|b| b.1.to_string())
        .unwrap_or_default();
    (code, body)
}

#[test]
fn serves_index_and_files_and_refuses_traversal() {
    let base = common::tmp("serve");
    let root = base.join("results");
    let run = root.join("d5").join("20261202T101500Z");
    std::fs::create_dir_all(&run).unwrap();
    let (h, v) = common::d5();
    std::fs::write(run.join("verdict.json"), gauntlet_report::verdict_json(&v)).unwrap();
    std::fs::copy(
        common::repo().join("examples/d5-commit-before-processing.jsonl"),
        run.join("history.jsonl"),
    )
    .unwrap();
    gauntlet_report::write_run_reports(&run, &h, &v, None, None).unwrap();
    std::os::unix::fs::symlink("20261202T101500Z", root.join("d5").join("latest")).unwrap();
    std::fs::write(base.join("secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink("../../secret.txt", root.join("d5").join("escape.txt")).unwrap();
    let addr = start(root);

    let (code, index) = get(addr, "/");
    assert_eq!(code, 200);
    assert!(
        index.contains("<td>d5</td><td>20261202T101500Z</td><td class=\"invalid\">invalid</td>"),
        "{index}"
    );
    assert!(index.contains("<span class=\"tag\">lost 200</span>"));
    assert!(index.contains("href=\"/d5/20261202T101500Z/report.html\""));
    assert_eq!(
        index.matches("<tr>").count(),
        2,
        "one run (latest is a symlink, not a second run)"
    );

    let (code, body) = get(addr, "/d5/20261202T101500Z/verdict.json");
    assert_eq!(code, 200);
    assert_eq!(body, gauntlet_report::verdict_json(&v));
    let (code, body) = get(addr, "/d5/latest/report.html");
    assert_eq!(code, 200);
    assert!(body.contains("id=\"verdict\""));
    let (code, _) = get(addr, "/d5/20261202T101500Z/");
    assert_eq!(code, 200, "a run folder serves its report");

    for bad in [
        "/../secret.txt",
        "/d5/../../secret.txt",
        "/%2e%2e/secret.txt",
        "/d5/%2E%2E/%2E%2E/secret.txt",
        "/..%2fsecret.txt",
        "/d5/escape.txt",
        "//etc/passwd",
        "/%2fetc/passwd",
        "/d5\\..\\..\\secret.txt",
    ] {
        let (code, body) = get(addr, bad);
        assert!(code == 403 || code == 404, "{bad}: {code}");
        assert!(
            !body.contains("secret") || body.contains("Forbidden"),
            "{bad} leaked"
        );
    }
    assert_eq!(get(addr, "/nope.html").0, 404);
}
