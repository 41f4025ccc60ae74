//! echo-tokio: the Tokio peer of bench/io. An echo server with a task per
//! connection, as a Tokio programmer writes one (TcpListener::accept,
//! tokio::spawn, read and write_all on TcpStream, TCP_NODELAY as the other
//! servers). `--flavor current_thread` (the default) or `--flavor
//! multi_thread --workers N`. Listens on 127.0.0.1 only; runs until killed.
//! Built by bench/io/run.sh, never by CMake.
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const USAGE: &str = "usage: echo-tokio --port N [--flavor current_thread|multi_thread] [--workers N]\n\
An echo server with a task per connection on 127.0.0.1:N (bench/io), until killed.\n";

async fn serve(port: u16) {
    let ln = match TcpListener::bind(("127.0.0.1", port)).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("echo-tokio: cannot listen on 127.0.0.1:{}: {}", port, e);
            std::process::exit(1);
        }
    };
    loop {
        let (mut s, _) = match ln.accept().await {
            Ok(c) => c,
            Err(e) => {
                eprintln!("echo-tokio: accept: {}", e);
                continue;
            }
        };
        let _ = s.set_nodelay(true);
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            loop {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        if s.write_all(&buf[..n]).await.is_err() {
                            return;
                        }
                    }
                }
            }
        });
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (mut port, mut flavor, mut workers) = (0u32, String::from("current_thread"), 2usize);
    let mut i = 1;
    while i < args.len() {
        let a = args[i].as_str();
        let val = args.get(i + 1).cloned().unwrap_or_default();
        match a {
            "-h" | "--help" => {
                print!("{}", USAGE);
                return;
            }
            "--version" => {
                println!("echo-tokio (weft) {}", option_env!("WEFT_VERSION").unwrap_or("unknown"));
                return;
            }
            "--port" => port = val.parse().unwrap_or(0),
            "--flavor" => flavor = val,
            "--workers" => workers = val.parse().unwrap_or(0),
            _ => {
                eprint!("echo-tokio: unknown option '{}'\n{}", a, USAGE);
                std::process::exit(2);
            }
        }
        i += 2;
    }
    if port == 0 || port > 65535 || workers == 0 || (flavor != "current_thread" && flavor != "multi_thread") {
        eprint!("{}", USAGE);
        std::process::exit(2);
    }
    let rt = if flavor == "current_thread" {
        tokio::runtime::Builder::new_current_thread().enable_io().build()
    } else {
        tokio::runtime::Builder::new_multi_thread().worker_threads(workers).enable_io().build()
    };
    rt.expect("echo-tokio: runtime").block_on(serve(port as u16));
}
