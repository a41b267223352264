//! A Toxiproxy-style TCP proxy the harness owns: one [`Link`] per broker node
//! endpoint, listening on `127.0.0.1:<ephemeral>` and forwarding to the node's
//! published port. Clients connect to the link instead of the node, so the
//! harness can degrade the path between clients and one node at run time,
//! separately in each direction, without touching the node (no `tc netem`
//! needed: many kernels lack `sch_netem`).
//!
//! What each toxic does to a TCP stream (per direction: `up` is client -> broker,
//! `down` is broker -> client):
//!
//! * [`Toxic::Pass`]: bytes are copied as they come.
//! * [`Toxic::Delay`]: each chunk is held `latency + uniform(0..=jitter)` (seeded)
//!   after it was read; chunks keep their order (a chunk never overtakes the
//!   previous one), so the stream stays a valid stream.
//! * [`Toxic::Drop`]: bytes read in that direction are discarded. The stream stays
//!   open and the peer hears nothing: a dropped reply looks like a broker that
//!   stopped answering, so the client times out and usually retries, often on a
//!   NEW connection (librdkafka closes a connection whose request timed out). The
//!   request itself did reach the broker, which is what stores a message twice
//!   (seed D2). TCP never loses bytes inside a stream, so a connection that had
//!   bytes discarded is corrupt: when the toxic is healed, every such ("tainted")
//!   connection is reset, as a real network would end it once its retransmissions
//!   gave up. Connections that lost nothing carry on.
//! * [`Toxic::Bandwidth`]: the writer sleeps `len / rate` after each chunk.
//! * `loss` ([`LinkState::loss`]): each chunk, in either direction, is discarded
//!   with that probability, and the connection that lost it is reset at once
//!   (a lossy path, seen from a TCP client: stalls ending in a reset).
//! * `refuse` ([`LinkState::refuse`], client-partition): new connections are
//!   accepted and reset at once (the client sees its connect fail);
//!   [`Link::reset_all`] ends the existing ones.
//! * blackhole: both directions [`Toxic::Drop`]; new connections are accepted
//!   and hear nothing.
//! * [`Link::reset_all`]: every open connection is closed with RST (SO_LINGER 0)
//!   on both sides.
//!
//! A link with no upstream yet (the node is not created) refuses connections.
//!
//! May import: `error` only.
use crate::error::HarnessError;
use gauntlet_history::rng::Rng;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// What happens to the bytes of one direction.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Toxic {
    /// Copy the bytes as they come.
    #[default]
    Pass,
    /// Hold each chunk `latency + uniform(0..=jitter)`.
    Delay {
        /// Added to every chunk.
        latency: Duration,
        /// The most added on top of `latency`, drawn per chunk (seeded).
        jitter: Duration,
    },
    /// Discard the bytes (the connection is reset when healed).
    Drop,
    /// At most this many bytes per second.
    Bandwidth {
        /// Bytes per second; 0 counts as 1.
        bytes_per_sec: u64,
    },
}

/// The whole state of a link.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LinkState {
    /// Client -> broker.
    pub up: Toxic,
    /// Broker -> client.
    pub down: Toxic,
    /// Probability that a chunk is lost (and its connection reset), 0.0..=1.0.
    pub loss: f64,
    /// New connections are reset at once.
    pub refuse: bool,
}

impl LinkState {
    /// Nothing done to the link: both directions pass, no loss, no refusal.
    pub fn is_pass(&self) -> bool {
        *self == LinkState::default()
    }
}

/// What a link has done so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct LinkStats {
    /// Client connections forwarded to the node.
    pub connections: u64,
    /// Client connections reset at once (no upstream, refusing, or the node unreachable).
    pub refused: u64,
    /// Forwarded connections closed with RST (a reset order, or a lost chunk).
    pub resets: u64,
    /// Bytes written to the node (client -> broker).
    pub bytes_up: u64,
    /// Bytes written to the clients (broker -> client).
    pub bytes_down: u64,
    /// Bytes from the clients discarded (drop or loss).
    pub dropped_up: u64,
    /// Bytes from the node discarded (drop or loss).
    pub dropped_down: u64,
}

#[derive(Default)]
struct Counters {
    connections: AtomicU64,
    refused: AtomicU64,
    resets: AtomicU64,
    bytes_up: AtomicU64,
    bytes_down: AtomicU64,
    dropped_up: AtomicU64,
    dropped_down: AtomicU64,
}

/// A reset order: `all`, or only the connections that lost bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct ResetOrder {
    generation: u64,
    all: bool,
}

struct Shared {
    state: Mutex<LinkState>,
    upstream: Mutex<Option<SocketAddr>>,
    rng: Mutex<Rng>,
    reset: watch::Sender<ResetOrder>,
    counters: Counters,
}

impl Shared {
    fn state(&self) -> LinkState {
        self.state.lock().map(|s| *s).unwrap_or_default()
    }
    fn random_below(&self, n: u64) -> u64 {
        self.rng.lock().map(|mut r| r.below(n)).unwrap_or(0)
    }
    fn chance(&self, p: f64) -> bool {
        p > 0.0 && self.rng.lock().map(|mut r| r.chance(p)).unwrap_or(false)
    }
    fn order_reset(&self, all: bool) {
        self.reset.send_modify(|o| {
            o.generation += 1;
            o.all = all;
        });
    }
}

/// One proxied endpoint of one node.
pub struct Link {
    node: String,
    listen: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("node", &self.node)
            .field("listen", &self.listen)
            .field("state", &self.shared.state())
            .finish()
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.task.abort();
        self.shared.order_reset(true);
    }
}

const CHUNK: usize = 16 * 1024;

impl Link {
    /// Listens on `127.0.0.1:0`; forwards once [`Link::set_upstream`] is called.
    pub async fn bind(node: &str, seed: u64) -> Result<Link, HarnessError> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(HarnessError::NoPort)?;
        let listen = listener.local_addr().map_err(HarnessError::NoPort)?;
        let (reset, _) = watch::channel(ResetOrder::default());
        let shared = Arc::new(Shared {
            state: Mutex::new(LinkState::default()),
            upstream: Mutex::new(None),
            rng: Mutex::new(Rng::new(seed)),
            reset,
            counters: Counters::default(),
        });
        let task = tokio::spawn(accept_loop(listener, shared.clone()));
        Ok(Link {
            node: node.to_string(),
            listen,
            shared,
            task,
        })
    }

    /// The node this link stands in front of.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.listen
    }

    /// Forward new connections to `addr` (the node's published port).
    pub fn set_upstream(&self, addr: SocketAddr) {
        if let Ok(mut u) = self.shared.upstream.lock() {
            *u = Some(addr);
        }
    }

    /// The link's toxics now.
    pub fn state(&self) -> LinkState {
        self.shared.state()
    }

    /// Switches the link's toxics; open connections follow at their next chunk.
    pub fn set(&self, state: LinkState) {
        let was = self.shared.state();
        if let Ok(mut s) = self.shared.state.lock() {
            *s = state;
        }
        // Leaving a dropping state: the connections that lost bytes are corrupt.
        let dropped = |s: &LinkState| s.up == Toxic::Drop || s.down == Toxic::Drop || s.loss > 0.0;
        if dropped(&was) && !dropped(&state) {
            self.shared.order_reset(false);
        }
    }

    /// Back to pass; resets the connections that lost bytes.
    pub fn heal(&self) {
        self.set(LinkState::default());
    }

    /// Closes every open connection with RST, both sides.
    pub fn reset_all(&self) {
        self.shared.order_reset(true);
    }

    /// The link's counters so far.
    pub fn stats(&self) -> LinkStats {
        let c = &self.shared.counters;
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        LinkStats {
            connections: g(&c.connections),
            refused: g(&c.refused),
            resets: g(&c.resets),
            bytes_up: g(&c.bytes_up),
            bytes_down: g(&c.bytes_down),
            dropped_up: g(&c.dropped_up),
            dropped_down: g(&c.dropped_down),
        }
    }
}

fn rst(stream: TcpStream) {
    let _ = stream.set_zero_linger();
    drop(stream);
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let upstream = shared.upstream.lock().ok().and_then(|u| *u);
            let refuse = shared.state().refuse;
            let Some(up_addr) = upstream.filter(|_| !refuse) else {
                shared.counters.refused.fetch_add(1, Ordering::Relaxed);
                rst(client);
                return;
            };
            let server =
                match tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(up_addr))
                    .await
                {
                    Ok(Ok(s)) => s,
                    _ => {
                        shared.counters.refused.fetch_add(1, Ordering::Relaxed);
                        rst(client);
                        return;
                    }
                };
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            shared.counters.connections.fetch_add(1, Ordering::Relaxed);
            connection(client, server, shared).await;
        });
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    Up,
    Down,
}

async fn connection(client: TcpStream, server: TcpStream, shared: Arc<Shared>) {
    let mut orders = shared.reset.subscribe();
    orders.borrow_and_update();
    let tainted = AtomicBool::new(false);
    let lost = tokio::sync::Notify::new();
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    let reset = {
        let pumps = async {
            tokio::join!(
                pump(&mut cr, &mut sw, Dir::Up, &shared, &tainted, &lost),
                pump(&mut sr, &mut cw, Dir::Down, &shared, &tainted, &lost)
            );
        };
        let ordered = async {
            loop {
                if orders.changed().await.is_err() {
                    // The link is gone.
                    return;
                }
                let o = *orders.borrow_and_update();
                if o.all || tainted.load(Ordering::Relaxed) {
                    return;
                }
            }
        };
        tokio::select! {
            () = pumps => false,
            () = ordered => true,
            () = lost.notified() => true,
        }
    };
    if reset {
        shared.counters.resets.fetch_add(1, Ordering::Relaxed);
        let _ = cr.as_ref().set_zero_linger();
        let _ = sr.as_ref().set_zero_linger();
        // `forget`: no FIN on the way out; dropping the read half closes with RST.
        cw.forget();
        sw.forget();
        drop(cr);
        drop(sr);
    }
}

enum Chunk {
    Data(Instant, Vec<u8>),
    Eof,
}

/// Copies one direction: a reader applies drop, loss and delay; a writer waits
/// out each chunk's deadline and the bandwidth limit.
async fn pump(
    r: &mut OwnedReadHalf,
    w: &mut OwnedWriteHalf,
    dir: Dir,
    shared: &Shared,
    tainted: &AtomicBool,
    lost: &tokio::sync::Notify,
) {
    let (tx, mut rx) = mpsc::channel::<Chunk>(256);
    let c = &shared.counters;
    let (bytes, dropped) = match dir {
        Dir::Up => (&c.bytes_up, &c.dropped_up),
        Dir::Down => (&c.bytes_down, &c.dropped_down),
    };
    let reader = async move {
        let mut last = Instant::now();
        loop {
            let mut buf = vec![0u8; CHUNK];
            let n = match r.read(&mut buf).await {
                Ok(0) | Err(_) => {
                    let _ = tx.send(Chunk::Eof).await;
                    return;
                }
                Ok(n) => n,
            };
            buf.truncate(n);
            let state = shared.state();
            let toxic = match dir {
                Dir::Up => state.up,
                Dir::Down => state.down,
            };
            if toxic == Toxic::Drop {
                tainted.store(true, Ordering::Relaxed);
                dropped.fetch_add(n as u64, Ordering::Relaxed);
                continue;
            }
            if shared.chance(state.loss) {
                tainted.store(true, Ordering::Relaxed);
                dropped.fetch_add(n as u64, Ordering::Relaxed);
                lost.notify_one();
                return;
            }
            let now = Instant::now();
            let due = match toxic {
                Toxic::Delay { latency, jitter } => {
                    let j = shared.random_below(jitter.as_micros() as u64 + 1);
                    now + latency + Duration::from_micros(j)
                }
                _ => now,
            };
            // Never overtake the chunk before: the stream keeps its order.
            last = last.max(due);
            if tx.send(Chunk::Data(last, buf)).await.is_err() {
                return;
            }
        }
    };
    let writer = async {
        while let Some(chunk) = rx.recv().await {
            match chunk {
                Chunk::Eof => {
                    let _ = w.shutdown().await;
                    return;
                }
                Chunk::Data(due, data) => {
                    // Only a real delay sleeps: tokio's timer has a 1 ms tick, which
                    // would otherwise add ~1 ms to every chunk of a passing link.
                    if due > Instant::now() {
                        tokio::time::sleep_until(due).await;
                    }
                    if w.write_all(&data).await.is_err() {
                        return;
                    }
                    bytes.fetch_add(data.len() as u64, Ordering::Relaxed);
                    let toxic = match dir {
                        Dir::Up => shared.state().up,
                        Dir::Down => shared.state().down,
                    };
                    if let Toxic::Bandwidth { bytes_per_sec } = toxic {
                        let secs = data.len() as f64 / bytes_per_sec.max(1) as f64;
                        tokio::time::sleep(Duration::from_secs_f64(secs)).await;
                    }
                }
            }
        }
    };
    // The writer ends when the reader's channel closes or the peer goes away.
    tokio::join!(reader, writer);
}

/// The links of a run: one per node for the proxied port.
#[derive(Debug, Default)]
pub struct Proxy {
    /// One link per node, in node order.
    pub links: Vec<Link>,
    /// The consumers' link to their dedup store (seed D7), when the run has
    /// one: not a broker's, so not in [`Proxy::addrs`]; a link fault reaches
    /// it only when it is aimed at it by name (`dedup-store`).
    pub dedup: Option<Link>,
}

impl Proxy {
    /// One link per node, seeded from `seed` and the node's position.
    pub async fn bind(nodes: &[String], seed: u64) -> Result<Proxy, HarnessError> {
        let mut links = Vec::with_capacity(nodes.len());
        for (i, n) in nodes.iter().enumerate() {
            links.push(Link::bind(n, seed ^ ((i as u64 + 1) << 32)).await?);
        }
        Ok(Proxy { links, dedup: None })
    }

    /// The link in front of `node`, if there is one.
    pub fn link(&self, node: &str) -> Option<&Link> {
        self.links.iter().find(|l| l.node == node)
    }

    /// `127.0.0.1:port` of each link, in node order.
    pub fn addrs(&self) -> Vec<String> {
        self.links.iter().map(|l| l.addr().to_string()).collect()
    }

    /// Every link back to pass (tainted connections reset).
    pub fn heal(&self) {
        for l in self.links.iter().chain(&self.dedup) {
            l.heal();
        }
    }
}

#[cfg(test)]
mod tests;
