//! The redis-server under test, and just enough of a client for the bench's own errands:
//! seeing whether the server answers, loading the ceiling's script and deleting the keys a
//! run left behind. No measured traffic goes through here.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::Result;

/// Where the server is, from a `redis://[[user]:password@]host[:port][/db]` URL.
#[derive(Debug, Clone)]
pub struct RedisTarget {
    url: String,
    pub host: String,
    pub port: u16,
    pub username: Option<String>,
    pub password: Option<String>,
    pub db: u32,
}

impl RedisTarget {
    pub fn parse(url: &str) -> std::result::Result<Self, String> {
        let shown = polylock::url::redact(url);
        let rest = url
            .strip_prefix("redis://")
            .ok_or_else(|| format!("'{shown}' is not a redis:// URL (the redis section runs on plain redis://)"))?;
        if rest.contains('?') {
            return Err(format!("'{shown}': the redis section takes no URL options"));
        }
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (userinfo, host_port) = match authority.rsplit_once('@') {
            Some((userinfo, host_port)) => (Some(userinfo), host_port),
            None => (None, authority),
        };
        let (username, password) = match userinfo.map(|info| info.split_once(':')) {
            Some(Some((user, password))) => ((!user.is_empty()).then(|| user.to_string()), Some(password.to_string())),
            Some(None) => (userinfo.map(str::to_string), None),
            None => (None, None),
        };
        let (host, port) = match host_port.strip_prefix('[') {
            // [::1]:6379
            Some(bracketed) => {
                let (host, after) =
                    bracketed.split_once(']').ok_or_else(|| format!("'{shown}': unclosed '[' in the host"))?;
                (host, after.strip_prefix(':'))
            }
            None => match host_port.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (host_port, None),
            },
        };
        if host.is_empty() {
            return Err(format!("'{shown}' names no host"));
        }
        let port = match port {
            Some(port) => port.parse().map_err(|_| format!("'{shown}': the port '{port}' is not a number"))?,
            None => 6379,
        };
        let db = match path {
            "" => 0,
            db => db.parse().map_err(|_| format!("'{shown}': the database '{db}' is not a number"))?,
        };
        Ok(RedisTarget { url: url.to_string(), host: host.to_string(), port, username, password, db })
    }

    /// The URL as given: for the clients under test, never for printing.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The URL with any password hidden.
    pub fn shown(&self) -> String {
        polylock::url::redact(&self.url)
    }

    /// Connect, authenticate and select the database; every step gives up after `timeout`.
    pub fn connect(&self, timeout: Duration) -> Result<Connection> {
        let mut last_error = None;
        for addr in (self.host.as_str(), self.port).to_socket_addrs()? {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(stream) => {
                    stream.set_read_timeout(Some(timeout))?;
                    stream.set_write_timeout(Some(timeout))?;
                    stream.set_nodelay(true)?;
                    let mut connection = Connection { reader: BufReader::new(stream.try_clone()?), writer: stream };
                    if let Some(password) = &self.password {
                        match &self.username {
                            Some(user) => connection.call(&["AUTH", user, password])?,
                            None => connection.call(&["AUTH", password])?,
                        };
                    }
                    if self.db != 0 {
                        connection.call(&["SELECT", &self.db.to_string()])?;
                    }
                    return Ok(connection);
                }
                Err(err) => last_error = Some(err),
            }
        }
        Err(match last_error {
            Some(err) => format!("cannot connect to {}:{}: {err}", self.host, self.port).into(),
            None => format!("{} resolves to no address", self.host).into(),
        })
    }
}

/// A server reply (RESP2). Error replies come back as `Err`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Status(String),
    Integer(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Reply>>),
}

impl Reply {
    fn text(&self) -> Option<String> {
        match self {
            Reply::Status(text) => Some(text.clone()),
            Reply::Bulk(Some(bytes)) => Some(String::from_utf8_lossy(bytes).into_owned()),
            _ => None,
        }
    }
}

pub struct Connection {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Connection {
    pub fn call(&mut self, args: &[&str]) -> Result<Reply> {
        let mut request = format!("*{}\r\n", args.len()).into_bytes();
        for arg in args {
            request.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
            request.extend_from_slice(arg.as_bytes());
            request.extend_from_slice(b"\r\n");
        }
        self.writer.write_all(&request)?;
        read_reply(&mut self.reader)
    }

    /// `SCRIPT LOAD`: the script's SHA1, for EVALSHA.
    pub fn script_load(&mut self, script: &str) -> Result<String> {
        let reply = self.call(&["SCRIPT", "LOAD", script])?;
        Ok(reply.text().ok_or_else(|| format!("SCRIPT LOAD answered {reply:?}"))?)
    }

    /// Delete every key matching `pattern` (SCAN, then UNLINK); how many there were.
    pub fn delete_matching(&mut self, pattern: &str) -> Result<usize> {
        let mut cursor = "0".to_string();
        let mut deleted = 0;
        loop {
            let reply = self.call(&["SCAN", &cursor, "MATCH", pattern, "COUNT", "1000"])?;
            let Reply::Array(Some(parts)) = reply else { return Err(format!("SCAN answered {reply:?}").into()) };
            let (Some(next), Some(Reply::Array(Some(keys)))) = (parts.first().and_then(Reply::text), parts.get(1))
            else {
                return Err(format!("SCAN answered {parts:?}").into());
            };
            let keys: Vec<String> = keys.iter().filter_map(Reply::text).collect();
            if !keys.is_empty() {
                let mut args = vec!["UNLINK"];
                args.extend(keys.iter().map(String::as_str));
                self.call(&args)?;
                deleted += keys.len();
            }
            if next == "0" {
                return Ok(deleted);
            }
            cursor = next;
        }
    }
}

fn read_reply(reader: &mut impl BufRead) -> Result<Reply> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Err("the redis server closed the connection".into());
    }
    let line = line.trim_end_matches(['\r', '\n']);
    let (kind, body) = line.split_at_checked(1).ok_or("the redis server sent an empty line")?;
    let number = || -> Result<i64> { Ok(body.parse().map_err(|_| format!("bad number in a reply: {line:?}"))?) };
    match kind {
        "+" => Ok(Reply::Status(body.to_string())),
        "-" => Err(format!("redis answered: {body}").into()),
        ":" => Ok(Reply::Integer(number()?)),
        "$" => match usize::try_from(number()?) {
            Ok(len) => {
                let mut bytes = vec![0; len + 2];
                reader.read_exact(&mut bytes)?;
                bytes.truncate(len);
                Ok(Reply::Bulk(Some(bytes)))
            }
            Err(_) => Ok(Reply::Bulk(None)),
        },
        "*" => match usize::try_from(number()?) {
            Ok(len) => Ok(Reply::Array(Some((0..len).map(|_| read_reply(reader)).collect::<Result<_>>()?))),
            Err(_) => Ok(Reply::Array(None)),
        },
        _ => Err(format!("unexpected reply from the redis server: {line:?}").into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse() {
        let plain = RedisTarget::parse("redis://127.0.0.1:16379").unwrap();
        assert_eq!(
            (plain.host.as_str(), plain.port, plain.db, plain.password.as_deref()),
            ("127.0.0.1", 16379, 0, None)
        );
        let full = RedisTarget::parse("redis://me:s3cret@[::1]:7000/2").unwrap();
        assert_eq!((full.host.as_str(), full.port, full.db), ("::1", 7000, 2));
        assert_eq!((full.username.as_deref(), full.password.as_deref()), (Some("me"), Some("s3cret")));
        assert!(!full.shown().contains("s3cret"));
        let password_only = RedisTarget::parse("redis://:pw@localhost").unwrap();
        assert_eq!(
            (password_only.username, password_only.password.as_deref(), password_only.port),
            (None, Some("pw"), 6379)
        );
        assert!(RedisTarget::parse("rediss://localhost").is_err());
        assert!(RedisTarget::parse("redis://localhost:x").is_err());
        let err = RedisTarget::parse("redis://u:s3cret@h:1?x=1").unwrap_err();
        assert!(!err.contains("s3cret"), "{err}");
    }

    #[test]
    fn replies_parse() {
        let mut input: &[u8] = b"*3\r\n+OK\r\n:42\r\n$5\r\nhello\r\n$-1\r\n-ERR no\r\n";
        let reply = read_reply(&mut input).unwrap();
        let expected = vec![Reply::Status("OK".into()), Reply::Integer(42), Reply::Bulk(Some(b"hello".to_vec()))];
        assert_eq!(reply, Reply::Array(Some(expected)));
        assert_eq!(read_reply(&mut input).unwrap(), Reply::Bulk(None));
        assert!(read_reply(&mut input).unwrap_err().to_string().contains("ERR no"));
    }
}
