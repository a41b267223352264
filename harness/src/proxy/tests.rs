//! The proxy's own tests: links, counters, each link fault.
use super::*;

/// A real echo server on loopback.
async fn echo() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = l.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    addr
}

async fn proxied() -> Link {
    let link = Link::bind("n1", 7).await.expect("link");
    link.set_upstream(echo().await);
    link
}

/// Waits for `probe` to hold (polled every 10 ms), up to `within`; prints how
/// long it took. The proxy counts a chunk when it has handled it, which on a
/// loaded machine can come after the client's own timeout: the tests wait for
/// the count itself, not a fixed time.
async fn wait_for(what: &str, within: Duration, probe: impl Fn() -> bool) {
    let t = std::time::Instant::now();
    while !probe() {
        assert!(t.elapsed() < within, "{what}: not within {within:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    eprintln!("{what}: after {:?} (deadline {within:?})", t.elapsed());
}

async fn roundtrip(s: &mut TcpStream, msg: &[u8], limit: Duration) -> Option<Vec<u8>> {
    s.write_all(msg).await.ok()?;
    let mut got = vec![0u8; msg.len()];
    match tokio::time::timeout(limit, s.read_exact(&mut got)).await {
        Ok(Ok(_)) => Some(got),
        _ => None,
    }
}

#[tokio::test]
async fn bytes_pass_both_ways() {
    let link = proxied().await;
    let mut s = TcpStream::connect(link.addr()).await.expect("connect");
    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let got = roundtrip(&mut s, &big, Duration::from_secs(30)).await;
    assert_eq!(got.as_deref(), Some(&big[..]));
    let st = link.stats();
    assert_eq!((st.bytes_up, st.bytes_down), (200_000, 200_000));
    assert_eq!(st.connections, 1);
}

/// The delay is long (600 to 700 ms a reply) so that what is asserted holds on
/// a loaded machine: each delayed round trip takes at least the latency and
/// less than twice it (the delay is applied once, not per direction or per
/// chunk: 500 ms of slack for the scheduler), and a healed one less than the
/// latency (it is not delayed at all).
#[tokio::test]
async fn delay_is_applied_in_order() {
    let link = proxied().await;
    let mut s = TcpStream::connect(link.addr()).await.expect("connect");
    let (latency, jitter) = (Duration::from_millis(600), Duration::from_millis(100));
    link.set(LinkState {
        down: Toxic::Delay { latency, jitter },
        ..Default::default()
    });
    for i in 0..3u8 {
        let t = std::time::Instant::now();
        let got = roundtrip(&mut s, &[i; 10], Duration::from_secs(30)).await;
        let took = t.elapsed();
        eprintln!("delayed round trip {i}: {took:?}");
        assert_eq!(got, Some(vec![i; 10]));
        assert!(took >= latency, "{took:?}");
        assert!(took < 2 * latency, "delayed more than once: {took:?}");
    }
    link.heal();
    let t = std::time::Instant::now();
    assert!(roundtrip(&mut s, b"x", Duration::from_secs(30))
        .await
        .is_some());
    let took = t.elapsed();
    eprintln!("healed round trip: {took:?}");
    assert!(took < latency, "still delayed after the heal: {took:?}");
}

#[tokio::test]
async fn dropped_replies_reach_the_server_but_not_the_client() {
    // The upstream counts what it receives and answers; the proxy drops its answers.
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let up = l.local_addr().expect("addr");
    let received = Arc::new(AtomicU64::new(0));
    let rcv = received.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let rcv = rcv.clone();
            tokio::spawn(async move {
                let mut b = [0u8; 64];
                while let Ok(n) = s.read(&mut b).await {
                    if n == 0 || s.write_all(&b[..n]).await.is_err() {
                        break;
                    }
                    rcv.fetch_add(n as u64, Ordering::Relaxed);
                }
            });
        }
    });
    let link = Link::bind("n1", 1).await.expect("link");
    link.set_upstream(up);
    let mut s = TcpStream::connect(link.addr()).await.expect("connect");
    link.set(LinkState {
        down: Toxic::Drop,
        ..Default::default()
    });
    assert_eq!(
        roundtrip(&mut s, b"request", Duration::from_millis(300)).await,
        None
    );
    wait_for("the reply dropped", Duration::from_secs(30), || {
        link.stats().dropped_down >= 7
    })
    .await;
    assert_eq!(received.load(Ordering::Relaxed), 7);
    assert_eq!(link.stats().dropped_down, 7);
    // Healing resets the connection that lost its reply; a new one works.
    link.heal();
    let mut b = [0u8; 8];
    let after = tokio::time::timeout(Duration::from_secs(30), s.read(&mut b)).await;
    assert!(
        matches!(after, Ok(Err(_)) | Ok(Ok(0))),
        "tainted connection not closed: {after:?}"
    );
    let mut s2 = TcpStream::connect(link.addr()).await.expect("reconnect");
    assert_eq!(
        roundtrip(&mut s2, b"again", Duration::from_secs(30)).await,
        Some(b"again".to_vec())
    );

    // The other direction: requests dropped, nothing reaches the server.
    link.set(LinkState {
        up: Toxic::Drop,
        ..Default::default()
    });
    let before = received.load(Ordering::Relaxed);
    assert_eq!(
        roundtrip(&mut s2, b"lost", Duration::from_millis(300)).await,
        None
    );
    wait_for("the request dropped", Duration::from_secs(30), || {
        link.stats().dropped_up >= 4
    })
    .await;
    assert_eq!(received.load(Ordering::Relaxed), before);
    assert_eq!(link.stats().dropped_up, 4);
}

#[tokio::test]
async fn reset_closes_with_rst_and_refuse_turns_clients_away() {
    let link = proxied().await;
    let mut s = TcpStream::connect(link.addr()).await.expect("connect");
    assert!(roundtrip(&mut s, b"hi", Duration::from_secs(30))
        .await
        .is_some());
    link.reset_all();
    let mut b = [0u8; 4];
    let r = tokio::time::timeout(Duration::from_secs(30), s.read(&mut b)).await;
    match r {
        Ok(Err(e)) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset),
        other => panic!("expected a reset, got {other:?}"),
    }
    assert_eq!(link.stats().resets, 1);

    link.set(LinkState {
        refuse: true,
        ..Default::default()
    });
    let mut s = TcpStream::connect(link.addr()).await.expect("tcp accept");
    assert_eq!(roundtrip(&mut s, b"no", Duration::from_secs(1)).await, None);
    wait_for("the connection refused", Duration::from_secs(30), || {
        link.stats().refused >= 1
    })
    .await;
    link.heal();
    let mut s = TcpStream::connect(link.addr()).await.expect("connect");
    assert!(roundtrip(&mut s, b"yes", Duration::from_secs(30))
        .await
        .is_some());
}

#[tokio::test]
async fn loss_resets_the_connection_and_bandwidth_limits() {
    let link = proxied().await;
    link.set(LinkState {
        loss: 1.0,
        ..Default::default()
    });
    let mut s = TcpStream::connect(link.addr()).await.expect("connect");
    assert_eq!(roundtrip(&mut s, b"x", Duration::from_secs(1)).await, None);
    wait_for(
        "the lossy connection reset",
        Duration::from_secs(30),
        || link.stats().resets >= 1,
    )
    .await;
    link.set(LinkState {
        up: Toxic::Bandwidth {
            bytes_per_sec: 100_000,
        },
        ..Default::default()
    });
    let mut s = TcpStream::connect(link.addr()).await.expect("connect");
    let t = std::time::Instant::now();
    let data = vec![7u8; 64 * 1024];
    assert!(roundtrip(&mut s, &data, Duration::from_secs(30))
        .await
        .is_some());
    // 64 KiB at 100 kB/s: at least ~0.5 s (the last chunk's wait may follow the echo).
    assert!(
        t.elapsed() >= Duration::from_millis(450),
        "{:?}",
        t.elapsed()
    );
}

#[tokio::test]
async fn no_upstream_refuses() {
    let link = Link::bind("n1", 0).await.expect("link");
    let mut s = TcpStream::connect(link.addr()).await.expect("tcp accept");
    assert_eq!(
        roundtrip(&mut s, b"x", Duration::from_millis(500)).await,
        None
    );
    wait_for("the connection refused", Duration::from_secs(30), || {
        link.stats().refused >= 1
    })
    .await;
    assert_eq!(link.stats().refused, 1);
}
