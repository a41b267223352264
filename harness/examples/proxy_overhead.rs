//! What the harness's TCP proxy costs a client, measured on loopback against a real
//! echo server: request/reply round trips (64 bytes, one at a time) and bulk
//! throughput (1 MiB writes), direct and through a passing link.
//!
//! `cargo run --release -p gauntlet-harness --example proxy_overhead [ROUND_TRIPS]`
use gauntlet_harness::proxy::Link;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

async fn echo_server() -> std::io::Result<SocketAddr> {
    let l = TcpListener::bind("127.0.0.1:0").await?;
    let addr = l.local_addr()?;
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    Ok(addr)
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied().unwrap_or_default()
}

async fn round_trips(addr: SocketAddr, n: usize) -> std::io::Result<Vec<Duration>> {
    let mut s = TcpStream::connect(addr).await?;
    s.set_nodelay(true)?;
    let msg = [7u8; 64];
    let mut buf = [0u8; 64];
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        s.write_all(&msg).await?;
        s.read_exact(&mut buf).await?;
        out.push(t.elapsed());
    }
    out.sort();
    Ok(out)
}

async fn throughput(addr: SocketAddr, total: usize) -> std::io::Result<f64> {
    let s = TcpStream::connect(addr).await?;
    let (mut r, mut w) = s.into_split();
    let t = Instant::now();
    let writer = tokio::spawn(async move {
        let chunk = vec![1u8; 1 << 20];
        let mut sent = 0;
        while sent < total {
            if w.write_all(&chunk).await.is_err() {
                break;
            }
            sent += chunk.len();
        }
        w
    });
    let mut buf = vec![0u8; 1 << 16];
    let mut got = 0;
    while got < total {
        let n = r.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        got += n;
    }
    let _ = writer.await;
    Ok(got as f64 / t.elapsed().as_secs_f64() / (1 << 20) as f64)
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000);
    let upstream = echo_server().await?;
    let link = Link::bind("n1", 1)
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    link.set_upstream(upstream);
    // Warm up both paths.
    round_trips(upstream, 500).await?;
    round_trips(link.addr(), 500).await?;
    println!("{n} round trips of 64 bytes, one at a time:");
    for (name, addr) in [("direct", upstream), ("proxy ", link.addr())] {
        let rt = round_trips(addr, n).await?;
        println!(
            "  {name}  p50 {:>7.1} us  p99 {:>7.1} us  max {:>8.1} us",
            pct(&rt, 0.5).as_secs_f64() * 1e6,
            pct(&rt, 0.99).as_secs_f64() * 1e6,
            pct(&rt, 1.0).as_secs_f64() * 1e6,
        );
    }
    let total = 256 << 20;
    println!("bulk echo of {} MiB:", total >> 20);
    for (name, addr) in [("direct", upstream), ("proxy ", link.addr())] {
        println!("  {name}  {:>8.0} MiB/s", throughput(addr, total).await?);
    }
    Ok(())
}
