//! `bootstorm`: a rack booting at once. Many simulated iPXE clients, each on its own connection to the
//! boot listener, ask for their script, then fetch the kernel and initramfs it names; meanwhile
//! simulated agents poll the agent API. Prints files and bytes served per second against what the
//! loopback carries in the same run (a plain TCP copy of the same bytes to as many clients), the
//! controller's memory, and the agent API's latency before and during the storm.

use crate::sim;
use anyhow::{bail, Context, Result};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper::Request;
use hyper_util::rt::TokioIo;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `plinth-loadgen bootstorm`.
#[derive(clap::Args)]
pub struct BootstormArgs {
    /// The controller's URL (the agent API the probes poll).
    #[arg(long)]
    controller: String,
    /// The controller's certificate (PEM).
    #[arg(long)]
    cert: PathBuf,
    /// The boot listener's URL (`http://127.0.0.1:8080`).
    #[arg(long)]
    boot: String,
    /// Simulated iPXE clients, all at once.
    #[arg(long, default_value_t = 1000)]
    clients: usize,
    /// Simulated agents polling the agent API before and during the storm.
    #[arg(long, default_value_t = 20)]
    probes: usize,
    /// The controller's process id, for its memory.
    #[arg(long)]
    pid: Option<u32>,
}

/// One plain HTTP/1.1 connection.
struct Plain {
    sender: hyper::client::conn::http1::SendRequest<Empty<Bytes>>,
    host: String,
}

impl Plain {
    async fn connect(addr: &str) -> Result<Plain> {
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .with_context(|| format!("connect {addr}"))?;
        tcp.set_nodelay(true)?;
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Plain {
            sender,
            host: addr.to_string(),
        })
    }

    /// GETs `path`; answers the body's length, and the body itself when `keep`.
    async fn get(&mut self, path: &str, keep: bool) -> Result<(u64, Option<Bytes>)> {
        self.sender.ready().await?;
        let req = Request::builder()
            .uri(path)
            .header("host", &self.host)
            .header("user-agent", "iPXE/1.21.1")
            .body(Empty::new())?;
        let resp = self.sender.send_request(req).await?;
        if !resp.status().is_success() {
            bail!("GET {path}: HTTP {}", resp.status());
        }
        let mut body = resp.into_body();
        let mut len = 0u64;
        let mut kept = Vec::new();
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame?.into_data() {
                len += data.len() as u64;
                if keep {
                    kept.extend_from_slice(&data);
                }
            }
        }
        Ok((len, keep.then(|| Bytes::from(kept))))
    }
}

/// The path of the URL after `word ` on a script's line (`kernel http://h/boot/files/vmlinuz args`).
fn script_path(script: &str, word: &str) -> Result<String> {
    let url = script
        .lines()
        .find_map(|l| l.strip_prefix(word)?.strip_prefix(' '))
        .and_then(|rest| rest.split_whitespace().next())
        .with_context(|| format!("the script has no {word} line:\n{script}"))?;
    let path = url
        .split_once("://")
        .and_then(|(_, rest)| rest.find('/').map(|i| rest[i..].to_string()))
        .with_context(|| format!("{url} is not a URL"))?;
    Ok(path)
}

/// One iPXE client: script, kernel, initramfs; answers the bytes of the two files.
async fn boot_one(addr: String, i: usize) -> Result<u64> {
    let mut c = Plain::connect(&addr).await?;
    let mac = format!(
        "52:54:{:02x}:{:02x}:{:02x}:{:02x}",
        (i >> 24) & 0xff,
        (i >> 16) & 0xff,
        (i >> 8) & 0xff,
        i & 0xff
    );
    let (_, script) = c.get(&format!("/boot/ipxe?mac={mac}"), true).await?;
    let script = String::from_utf8_lossy(&script.unwrap_or_default()).into_owned();
    let (kernel, _) = c.get(&script_path(&script, "kernel")?, false).await?;
    let (initrd, _) = c.get(&script_path(&script, "initrd")?, false).await?;
    Ok(kernel + initrd)
}

/// What the loopback carries: `clients` connections at once, each reading `bytes` from a plain TCP
/// server on a thread and single-threaded runtime of its own (as the boot listener runs), writing from
/// one buffer in memory (as the boot listener does). Answers bytes per second.
async fn loopback(clients: usize, bytes: u64) -> Result<f64> {
    let (bound, addr) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || -> Result<()> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(async move {
            // The boot listener's backlog.
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.bind("127.0.0.1:0".parse()?)?;
            let listener = socket.listen(4096)?;
            let _ = bound.send(listener.local_addr()?);
            let chunk = Bytes::from(vec![7u8; 1 << 20]);
            let mut writers = tokio::task::JoinSet::new();
            for _ in 0..clients {
                let (mut s, _) = listener.accept().await?;
                s.set_nodelay(true)?;
                let chunk = chunk.clone();
                writers.spawn(async move {
                    let mut left = bytes;
                    while left > 0 {
                        let n = left.min(chunk.len() as u64) as usize;
                        if s.write_all(&chunk[..n]).await.is_err() {
                            return;
                        }
                        left -= n as u64;
                    }
                });
            }
            while writers.join_next().await.is_some() {}
            anyhow::Ok(())
        })
    });
    let addr = addr.recv().context("the loopback server did not start")?;
    let start = Instant::now();
    let mut readers = tokio::task::JoinSet::new();
    for _ in 0..clients {
        readers.spawn(async move {
            let mut s = tokio::net::TcpStream::connect(addr).await?;
            let mut buf = vec![0u8; 1 << 16];
            let mut got = 0u64;
            while got < bytes {
                let n = s.read(&mut buf).await?;
                if n == 0 {
                    break;
                }
                got += n as u64;
            }
            anyhow::Ok(got)
        });
    }
    let mut total = 0u64;
    while let Some(r) = readers.join_next().await {
        total += r??;
    }
    let secs = start.elapsed().as_secs_f64();
    server
        .join()
        .map_err(|_| anyhow::anyhow!("the loopback server panicked"))??;
    Ok(total as f64 / secs)
}

/// Polls of the agent API by `probes` registered agents until `stop`: each poll's latency in µs.
async fn probe(
    target: Arc<sim::Target>,
    seeds: std::ops::Range<usize>,
    stop: Arc<AtomicBool>,
) -> Result<Vec<u32>> {
    let mut tasks = tokio::task::JoinSet::new();
    for seed in seeds {
        let (target, stop) = (target.clone(), stop.clone());
        tasks.spawn(async move {
            let mut c = sim::connect(&target, sim::agent_config(&target, seed)?, None).await?;
            let mut lat = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                let (status, _) = c
                    .send(
                        "GET",
                        "/agent/v1/tasks?nonce=00112233445566778899aabbccddeeff&after=0&wait=0",
                        None,
                    )
                    .await?;
                if !(200..300).contains(&status) {
                    bail!("a probe's poll answered {status}");
                }
                lat.push(t.elapsed().as_micros().min(u128::from(u32::MAX)) as u32);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            anyhow::Ok(lat)
        });
    }
    let mut all = Vec::new();
    while let Some(r) = tasks.join_next().await {
        all.extend(r??);
    }
    all.sort_unstable();
    Ok(all)
}

/// Runs the storm.
pub async fn run(args: BootstormArgs) -> Result<()> {
    sim::raise_open_files()?;
    let target = sim::target(&args.controller, &args.cert)?;
    sim::register_all(&target, args.probes, 16, |_| (Vec::new(), None)).await?;
    let addr = args
        .boot
        .strip_prefix("http://")
        .context("--boot must be an http:// URL")?
        .trim_end_matches('/')
        .to_string();

    // The agent API's latency with no storm.
    let stop = Arc::new(AtomicBool::new(false));
    let quiet = tokio::spawn(probe(target.clone(), 0..args.probes, stop.clone()));
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::Relaxed);
    let quiet = quiet.await??;

    // One client alone first: the files' size (and the boot files read into memory).
    let per_client = boot_one(addr.clone(), usize::MAX >> 8).await?;
    eprintln!("quiet agent API measured; the storm begins");

    let rss_peak = Arc::new(AtomicU64::new(0));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = args.pid.map(|pid| {
        let (peak, on) = (rss_peak.clone(), sampling.clone());
        tokio::spawn(async move {
            while on.load(Ordering::Relaxed) {
                if let Some(mib) = sim::rss_mib(pid) {
                    peak.fetch_max(mib as u64, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    });
    let rss_before = args.pid.and_then(sim::rss_mib);

    let stop = Arc::new(AtomicBool::new(false));
    let busy = tokio::spawn(probe(target.clone(), 0..args.probes, stop.clone()));
    let start = Instant::now();
    let mut clients = tokio::task::JoinSet::new();
    for i in 0..args.clients {
        clients.spawn(boot_one(addr.clone(), i));
    }
    let mut bytes = 0u64;
    let mut failed = 0usize;
    while let Some(r) = clients.join_next().await {
        match r? {
            Ok(b) => bytes += b,
            Err(e) => {
                failed += 1;
                if failed <= 3 {
                    eprintln!("a client failed: {e:#}");
                }
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let busy = busy.await??;
    sampling.store(false, Ordering::Relaxed);
    if let Some(s) = sampler {
        let _ = s.await;
    }
    let served = args.clients - failed;
    eprintln!("the storm is over; measuring the loopback");
    let wire = loopback(args.clients, per_client).await?;

    println!(
        "boot storm: {} clients, each a script and {:.1} MiB of boot files",
        args.clients,
        per_client as f64 / 1048576.0
    );
    println!("  served      {served} clients ({failed} failed) in {secs:.2} s");
    println!(
        "  files       {:.0} files/s (script, kernel, initramfs: {} files)",
        (served * 3) as f64 / secs,
        served * 3
    );
    println!(
        "  bytes       {:.2} GiB/s",
        bytes as f64 / secs / 1073741824.0
    );
    println!(
        "  loopback    {:.2} GiB/s (the same bytes to as many clients, plain TCP, this run)",
        wire / 1073741824.0
    );
    println!(
        "  ratio       {:.2} of the loopback",
        bytes as f64 / secs / wire
    );
    if let Some(before) = rss_before {
        println!(
            "  controller  {before:.0} MiB before, {} MiB at the peak",
            rss_peak.load(Ordering::Relaxed)
        );
    }
    for (what, lat) in [("quiet", &quiet), ("storm", &busy)] {
        println!(
            "  agent API   {what}: {} polls, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            lat.len(),
            sim::percentile_ms(lat, 0.50),
            sim::percentile_ms(lat, 0.99),
            lat.last().map_or(0.0, |m| f64::from(*m) / 1000.0)
        );
    }
    if failed > 0 {
        bail!("{failed} of {} clients failed", args.clients);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scripts_urls_are_read_as_ipxe_reads_them() {
        let s = "#!ipxe\necho x\nkernel http://10.0.0.2:8080/boot/files/vmlinuz initrd=initrd.img a=b\ninitrd http://10.0.0.2:8080/boot/files/initrd.img\nboot\n";
        assert_eq!(script_path(s, "kernel").unwrap(), "/boot/files/vmlinuz");
        assert_eq!(script_path(s, "initrd").unwrap(), "/boot/files/initrd.img");
        assert!(script_path("#!ipxe\nexit\n", "kernel").is_err());
    }
}
