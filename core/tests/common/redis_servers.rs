//! Private redis-server processes for RedLock tests: independent servers on free ports above
//! 30000, no persistence, killed (after a SIGCONT, in case a test stopped one) when dropped.
//! Shared by the core's and the CLI's suites (the CLI includes this file by path); each uses
//! only some of it.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct RedisServers {
    pub ports: Vec<u16>,
    children: Vec<Child>,
}

impl RedisServers {
    /// `count` fresh servers. `slot` spreads the tests of one binary, which run at once, over
    /// the port range; a port someone else took is skipped.
    pub fn start(count: u16, slot: u16) -> RedisServers {
        for attempt in 0..20u16 {
            let spread = (std::process::id() as u16 % 500) * 50 + slot * 500 + attempt * count;
            let base = 30_000 + spread % 30_000;
            let ports: Vec<u16> = (base..base + count).collect();
            if !ports.iter().all(|port| std::net::TcpListener::bind(("127.0.0.1", *port)).is_ok()) {
                continue;
            }
            let children = ports
                .iter()
                .map(|port| {
                    Command::new("redis-server")
                        .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
                        .args(["--daemonize", "no"])
                        .stdout(Stdio::null())
                        .spawn()
                        .expect("redis-server must be installed (tests/services installs it)")
                })
                .collect();
            let mut servers = RedisServers { ports, children };
            if servers.all_answer() {
                return servers;
            }
            // A port taken between the look and the start: drop these (killed) and move on.
        }
        panic!("could not start {count} redis-servers on free ports above 30000");
    }

    /// Whether every server answers PING within 10 s (false as soon as one has exited).
    fn all_answer(&mut self) -> bool {
        (0..self.ports.len()).all(|index| {
            for _ in 0..200 {
                if ping(self.ports[index]) {
                    return true;
                }
                if matches!(self.children[index].try_wait(), Ok(Some(_))) {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            false
        })
    }

    /// `redlock://127.0.0.1:p1,127.0.0.1:p2,...` followed by `options` (e.g. `?lease=2s`).
    pub fn url(&self, options: &str) -> String {
        let hosts: Vec<String> = self.ports.iter().map(|port| format!("127.0.0.1:{port}")).collect();
        format!("redlock://{}{options}", hosts.join(","))
    }

    fn signal(&self, index: usize, signal: &str) {
        let status = Command::new("kill").args([signal, &self.children[index].id().to_string()]).status().unwrap();
        assert!(status.success());
    }

    /// SIGSTOP the server `index`: it keeps its port and connections but answers nothing.
    pub fn stop(&self, index: usize) {
        self.signal(index, "-STOP");
    }

    pub fn resume(&self, index: usize) {
        self.signal(index, "-CONT");
    }

    /// Kill the server `index` for good.
    pub fn kill(&mut self, index: usize) {
        self.children[index].kill().unwrap();
        self.children[index].wait().unwrap();
    }
}

fn ping(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    let mut reply = [0u8; 7];
    stream.write_all(b"PING\r\n").is_ok() && stream.read_exact(&mut reply).is_ok() && &reply == b"+PONG\r\n"
}

impl Drop for RedisServers {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = Command::new("kill").args(["-CONT", &child.id().to_string()]).status();
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
