//! peers-rust: the peer workloads (../peers.h) on two Rust runtimes, with the
//! options and CSV lines of every driver.
//!
//! Library "tokio": tokio's multi-thread runtime (work-stealing, one worker
//! per CPU the process may use, tokio's default).
//!
//!   spawn-wait   block_on (the main thread) spawns N empty tasks, then
//!                awaits every JoinHandle
//!   fib-tree     every call with n >= 2 tokio::spawns fib(n-1) and
//!                fib(n-2) and awaits both handles; the root is spawned too
//!   spawn-join   inside a spawned task: spawn an empty task, await its
//!                handle, N times
//!   pingpong     two spawned tasks, two tokio::sync::mpsc channels of
//!                capacity 1, on a runtime of 2 workers. tokio cannot pin a
//!                task to a worker, and a woken task usually runs next on
//!                the waker's worker (its LIFO slot), so this is mostly a
//!                hand-off on one worker, not a wake-up across threads
//!
//! Library "rayon": rayon's global pool (one thread per CPU, its default).
//!
//!   spawn-wait   rayon::scope called from the main thread (rayon runs the
//!                scope's body on a pool thread), s.spawn N empty jobs
//!   parallel-for par_iter_mut over the array (a[i] += 1), PASSES times
//!   fib-tree     rayon::join(fib(n-1), fib(n-2)): join runs the first
//!                closure at once and offers the second to thieves, runs it
//!                itself when nobody stole it (rayon's fork-join; the root
//!                is a job in the pool, spawned in a scope)
//!   spawn-join   inside the pool: rayon::scope with one empty s.spawn, N
//!                times
//!
//! Not here: pingpong on rayon (jobs must not block each other), mutex, and
//! the fiber workloads.

use std::process::exit;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Instant;

use rayon::prelude::*;

const PROG: &str = "peers-rust";

struct Opts {
    rep: i64,
    only: Option<String>,
    spawn_n: i64,
    for_iters: i64,
    for_passes: i64,
    fib_n: u32,
    join_n: i64,
    ping_n: i64,
}

fn die(what: &str) -> ! {
    eprintln!("{PROG}: {what}");
    exit(1)
}

const USAGE: &str = "[--rep R] [--small] [--sort-n N] [--fib-n N] [--only WORKLOAD]";

fn usage() -> ! {
    eprintln!("usage: {PROG} {USAGE}\n       {PROG} --help | --version");
    exit(2)
}

fn count(opt: &str, v: Option<&String>) -> i64 {
    match v.and_then(|s| s.parse::<i64>().ok()) {
        Some(n) if n >= 1 => n,
        _ => {
            eprintln!("{PROG}: {opt} needs a positive integer");
            exit(2)
        }
    }
}

/// The options of peers.h's peers_parse, with the same sizes.
fn parse() -> Opts {
    let args: Vec<String> = std::env::args().collect();
    let (mut rep, mut small, mut only, mut fib_n) = (1, false, None, 0);
    let mut i = 1;
    while i < args.len() {
        let v = args.get(i + 1);
        match args[i].as_str() {
            "--small" => small = true,
            "--rep" => {
                rep = count("--rep", v);
                i += 1
            }
            "--sort-n" => {
                count("--sort-n", v); // psort is not here
                i += 1
            }
            "--fib-n" => {
                fib_n = count("--fib-n", v);
                if fib_n > 40 {
                    die("--fib-n is at most 40")
                }
                i += 1
            }
            "--only" => {
                only = Some(v.unwrap_or_else(|| usage()).clone());
                i += 1
            }
            "-h" | "--help" => {
                println!("usage: {PROG} {USAGE}\n       {PROG} --help | --version");
                exit(0)
            }
            // WEFT_VERSION: set by build-runtimes.sh when it runs cargo.
            "--version" => {
                println!(
                    "{PROG} (weft) {}",
                    option_env!("WEFT_VERSION").unwrap_or("unknown")
                );
                exit(0)
            }
            other => {
                eprintln!("{PROG}: unknown option '{other}'");
                usage()
            }
        }
        i += 1
    }
    let pick = |s: i64, f: i64| if small { s } else { f };
    Opts {
        rep,
        only,
        spawn_n: pick(2000, 500_000),
        for_iters: pick(1000, 100_000),
        for_passes: pick(10, 200),
        fib_n: if fib_n > 0 {
            fib_n as u32
        } else {
            pick(15, 25) as u32
        },
        join_n: pick(2000, 200_000),
        ping_n: pick(2000, 100_000),
    }
}

impl Opts {
    fn want(&self, w: &str) -> bool {
        self.only.as_deref().map_or(true, |o| o == w)
    }

    fn emit(&self, workload: &str, lib: &str, n: i64, ns: f64) {
        println!("{workload},{lib},{},{n},{:.3}", self.rep, ns / n as f64);
    }
}

fn fib_value(n: u32) -> i64 {
    let (mut a, mut b) = (0i64, 1i64);
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    a
}

fn since(t0: Instant) -> f64 {
    t0.elapsed().as_nanos() as f64
}

fn fib_calls(n: u32) -> i64 {
    2 * fib_value(n + 1) - 1
}

fn runtime(workers: Option<usize>) -> tokio::runtime::Runtime {
    let mut b = tokio::runtime::Builder::new_multi_thread();
    if let Some(w) = workers {
        b.worker_threads(w);
    }
    b.build()
        .unwrap_or_else(|e| die(&format!("cannot start tokio: {e}")))
}

// ------------------------------------------------------------ tokio

fn tokio_spawn_wait(o: &Opts) {
    let rt = runtime(None);
    let n = o.spawn_n;
    let mut handles = Vec::with_capacity(n as usize);
    let t0 = Instant::now();
    let ran = rt.block_on(async move {
        for _ in 0..n {
            handles.push(tokio::spawn(async {}));
        }
        let mut ran = 0;
        for h in handles {
            h.await.unwrap_or_else(|_| die("spawn-wait: a task failed"));
            ran += 1;
        }
        ran
    });
    let ns = since(t0);
    if ran != n {
        die("spawn-wait: wrong count");
    }
    o.emit("spawn-wait", "tokio", n, ns);
}

fn tokio_fib(n: u32) -> std::pin::Pin<Box<dyn std::future::Future<Output = i64> + Send>> {
    Box::pin(async move {
        if n < 2 {
            return n as i64;
        }
        let a = tokio::spawn(tokio_fib(n - 1));
        let b = tokio::spawn(tokio_fib(n - 2));
        a.await.unwrap_or_else(|_| die("fib-tree: a task failed"))
            + b.await.unwrap_or_else(|_| die("fib-tree: a task failed"))
    })
}

fn tokio_fib_tree(o: &Opts) {
    let rt = runtime(None);
    let n = o.fib_n;
    let t0 = Instant::now();
    let v = rt.block_on(async move { tokio::spawn(tokio_fib(n)).await });
    let ns = since(t0);
    let v = v.unwrap_or_else(|_| die("fib-tree: the root failed"));
    if v != fib_value(n) {
        die("fib-tree: wrong value");
    }
    o.emit("fib-tree", "tokio", fib_calls(n), ns);
}

fn tokio_spawn_join(o: &Opts) {
    let rt = runtime(None);
    let n = o.join_n;
    let (ran, ns) = rt.block_on(async move {
        tokio::spawn(async move {
            let t0 = Instant::now();
            let mut ran = 0i64;
            for _ in 0..n {
                ran += tokio::spawn(async { 1i64 })
                    .await
                    .unwrap_or_else(|_| die("spawn-join: a task failed"));
            }
            (ran, since(t0))
        })
        .await
        .unwrap_or_else(|_| die("spawn-join: the root failed"))
    });
    if ran != n {
        die("spawn-join: wrong number of children");
    }
    o.emit("spawn-join", "tokio", n, ns);
}

fn tokio_pingpong(o: &Opts) {
    let rt = runtime(Some(2));
    let n = o.ping_n;
    let (bad, ns) = rt.block_on(async move {
        let (there_tx, mut there_rx) = tokio::sync::mpsc::channel::<i64>(1);
        let (back_tx, mut back_rx) = tokio::sync::mpsc::channel::<i64>(1);
        let b = tokio::spawn(async move {
            for _ in 0..n {
                let v = there_rx
                    .recv()
                    .await
                    .unwrap_or_else(|| die("pingpong: closed"));
                if back_tx.send(v + 1).await.is_err() {
                    die("pingpong: closed");
                }
            }
        });
        let a = tokio::spawn(async move {
            let t0 = Instant::now();
            let mut bad = 0;
            for i in 0..n {
                if there_tx.send(i).await.is_err() {
                    die("pingpong: closed");
                }
                let w = back_rx
                    .recv()
                    .await
                    .unwrap_or_else(|| die("pingpong: closed"));
                bad += (w != i + 1) as i64;
            }
            (bad, since(t0))
        });
        let r = a.await.unwrap_or_else(|_| die("pingpong: a task failed"));
        b.await.unwrap_or_else(|_| die("pingpong: a task failed"));
        r
    });
    if bad != 0 {
        die("pingpong: wrong reply");
    }
    o.emit("pingpong", "tokio", n, ns);
}

// ------------------------------------------------------------ rayon

fn rayon_spawn_wait(o: &Opts) {
    let ran = AtomicI64::new(0);
    let n = o.spawn_n;
    let t0 = Instant::now();
    rayon::scope(|s| {
        for _ in 0..n {
            s.spawn(|_| {});
        }
    });
    o.emit("spawn-wait", "rayon", n, since(t0));
    // The count, outside the timing (a counter in the timed jobs would be a
    // contended atomic the other drivers do not pay): scope returns only
    // after every job it spawned, so N counting jobs must count N.
    rayon::scope(|s| {
        for _ in 0..n {
            s.spawn(|_| {
                ran.fetch_add(1, Ordering::Relaxed);
            });
        }
    });
    if ran.load(Ordering::Relaxed) != n {
        die("spawn-wait: wrong count");
    }
}

fn rayon_parallel_for(o: &Opts) {
    let mut a = vec![0i32; o.for_iters as usize];
    let t0 = Instant::now();
    for _ in 0..o.for_passes {
        a.par_iter_mut().for_each(|x| *x += 1);
    }
    let ns = since(t0);
    if a.iter().any(|&x| x as i64 != o.for_passes) {
        die("parallel-for: wrong count");
    }
    o.emit("parallel-for", "rayon", o.for_iters * o.for_passes, ns);
}

fn rayon_fib(n: u32) -> i64 {
    if n < 2 {
        return n as i64;
    }
    let (a, b) = rayon::join(|| rayon_fib(n - 1), || rayon_fib(n - 2));
    a + b
}

fn rayon_fib_tree(o: &Opts) {
    let n = o.fib_n;
    let mut v = 0;
    let t0 = Instant::now();
    // The root call is a job of the pool too, as the other drivers' root is
    // a task.
    rayon::scope(|s| s.spawn(|_| v = rayon_fib(n)));
    let ns = since(t0);
    if v != fib_value(n) {
        die("fib-tree: wrong value");
    }
    o.emit("fib-tree", "rayon", fib_calls(n), ns);
}

fn rayon_spawn_join(o: &Opts) {
    let n = o.join_n;
    let ran = AtomicI64::new(0);
    let mut ns = 0.0;
    rayon::scope(|s| {
        s.spawn(|_| {
            let t0 = Instant::now();
            for _ in 0..n {
                rayon::scope(|s| {
                    s.spawn(|_| {
                        ran.fetch_add(1, Ordering::Relaxed);
                    })
                });
            }
            ns = since(t0);
        })
    });
    if ran.load(Ordering::Relaxed) != n {
        die("spawn-join: wrong number of children");
    }
    o.emit("spawn-join", "rayon", n, ns);
}

fn main() {
    let o = parse();
    if o.want("spawn-wait") {
        tokio_spawn_wait(&o);
        rayon_spawn_wait(&o);
    }
    if o.want("parallel-for") {
        rayon_parallel_for(&o);
    }
    if o.want("fib-tree") {
        tokio_fib_tree(&o);
        rayon_fib_tree(&o);
    }
    if o.want("spawn-join") {
        tokio_spawn_join(&o);
        rayon_spawn_join(&o);
    }
    if o.want("pingpong") {
        tokio_pingpong(&o);
    }
}
