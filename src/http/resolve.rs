//! Host names to addresses for the statically linked binary, std only: `/etc/hosts`, then the
//! DNS servers of `/etc/resolv.conf` over UDP (RFC 1035 §4), as glibc's `files dns` order does.
//!
//! The dynamic binary asks the system (`getaddrinfo`). The static one cannot do that well:
//! static glibc's `getaddrinfo` loads the host's NSS modules at run time, which must come from
//! the glibc version it was linked with (the linker warns as much), and it brought the
//! resolver, NSS and `dlopen` into the binary (110 KB, against this module's 16 KB: see
//! docs/measurements.md, "Session 27, house (issue 40)"). What this reads instead:
//! - an IP literal is its own address;
//! - `/etc/hosts`: every address listed for the name (ASCII case-insensitive), in file order;
//!   `localhost` and `*.localhost` are the loopback addresses when the file does not list them;
//! - DNS: `nameserver` (up to 3; 127.0.0.1 if none), `search` / `domain`, and `options`
//!   `ndots:`, `timeout:` and `attempts:` (defaults 1, 5 s, 2, as glibc's). A name with fewer
//!   than `ndots` dots is tried with each search domain first, then as given; one with more, or
//!   ending in `.`, as given first. Each name is asked for IPv4 (A) then IPv6 (AAAA) addresses,
//!   and the first name that has any answers. When no server answers a question in time, the
//!   lookup ends there, with that error.
//!
//! What it does not do: other NSS sources (mDNS, LDAP, systemd's `resolve`), DNS over TCP (a
//! truncated answer gives the addresses it holds), `rotate` and `options` beyond the three
//! above. Bounded: `/etc/hosts` and `/etc/resolv.conf` are read up to
//! [`RESOLVE_FILE_MAX_BYTES`], and a query and its answer are each one 512-byte datagram.

use crate::error::{Code, Error, Result};
use crate::limits::RESOLVE_FILE_MAX_BYTES;
use std::io::Read;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::time::Duration;

/// A DNS message over UDP without EDNS: at most 512 bytes (RFC 1035 §2.3.4).
const DATAGRAM_BYTES: usize = 512;

/// Record types asked for, and the class: A, AAAA, IN.
const TYPE_A: u16 = 1;
const TYPE_AAAA: u16 = 28;
const CLASS_IN: u16 = 1;

/// What `/etc/resolv.conf` says, as far as this reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conf {
    /// The servers asked, in order (port 53).
    pub nameservers: Vec<SocketAddr>,
    /// The search domains (up to 6).
    pub search: Vec<String>,
    /// Fewer dots than this in a name: the search domains are tried first.
    pub ndots: usize,
    /// How long one query waits for its answer.
    pub timeout: Duration,
    /// How many times the servers are asked in turn.
    pub attempts: u32,
}

impl Conf {
    /// Reads the text of a `resolv.conf`; lines it does not know are skipped, as glibc does.
    pub fn parse(text: &str) -> Conf {
        let mut c = Conf {
            nameservers: Vec::new(),
            search: Vec::new(),
            ndots: 1,
            timeout: Duration::from_secs(5),
            attempts: 2,
        };
        for line in text.lines() {
            let line = line.split(['#', ';']).next().unwrap_or("");
            let mut words = line.split_ascii_whitespace();
            match words.next() {
                Some("nameserver") if c.nameservers.len() < 3 => {
                    if let Some(ip) = words.next().and_then(|w| w.parse::<IpAddr>().ok()) {
                        c.nameservers.push(SocketAddr::new(ip, 53));
                    }
                }
                // The last `search` or `domain` line wins.
                Some("search" | "domain") => {
                    c.search = words.take(6).map(|w| w.trim_end_matches('.').to_string()).collect()
                }
                Some("options") => {
                    for w in words {
                        let (name, value) = w.split_once(':').unwrap_or((w, ""));
                        let n = crate::bytes::parse_u32(value);
                        match (name, n) {
                            ("ndots", Some(n)) => c.ndots = n.min(15) as usize,
                            ("timeout", Some(n)) => c.timeout = Duration::from_secs(u64::from(n.clamp(1, 30))),
                            ("attempts", Some(n)) => c.attempts = n.clamp(1, 5),
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        if c.nameservers.is_empty() {
            c.nameservers.push(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 53));
        }
        c
    }

    /// The names to ask for `host`, in order (see the module documentation).
    fn candidates(&self, host: &str) -> Vec<String> {
        if let Some(absolute) = host.strip_suffix('.') {
            return vec![absolute.to_string()];
        }
        let searched = self.search.iter().filter(|d| !d.is_empty()).map(|d| format!("{}.{}", host, d));
        if host.bytes().filter(|&b| b == b'.').count() >= self.ndots {
            core::iter::once(host.to_string()).chain(searched).collect()
        } else {
            searched.chain(core::iter::once(host.to_string())).collect()
        }
    }
}

/// The addresses of `host` at `port`, resolved as the module documentation says, from the
/// system's `/etc/hosts` and `/etc/resolv.conf`.
pub fn lookup(host: &str, port: u16) -> Result<Vec<SocketAddr>> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let hosts = read_small("/etc/hosts");
    let conf = Conf::parse(&read_small("/etc/resolv.conf"));
    lookup_with(host, port, &hosts, &conf)
}

/// [`lookup`] with the hosts file's text and the configuration given.
pub fn lookup_with(host: &str, port: u16, hosts: &str, conf: &Conf) -> Result<Vec<SocketAddr>> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let found = in_hosts(hosts, host.strip_suffix('.').unwrap_or(host));
    if !found.is_empty() {
        return Ok(found.into_iter().map(|ip| SocketAddr::new(ip, port)).collect());
    }
    let lower = host.to_ascii_lowercase();
    let lower = lower.trim_end_matches('.');
    if lower == "localhost" || lower.ends_with(".localhost") {
        return Ok(vec![
            SocketAddr::new(Ipv4Addr::LOCALHOST.into(), port),
            SocketAddr::new(Ipv6Addr::LOCALHOST.into(), port),
        ]);
    }
    let mut last: Option<Error> = None;
    for name in conf.candidates(host) {
        let mut ips = Vec::new();
        for qtype in [TYPE_A, TYPE_AAAA] {
            match ask(&name, qtype, conf) {
                Ok(mut got) => ips.append(&mut got),
                // No server answered: they will not answer the next question either, so the
                // wait is one query's (`timeout` x `attempts` x servers), not one per name.
                Err(e) if e.code() == Code::LlmTimeout => return Err(e),
                Err(e) => last = Some(e),
            }
        }
        if !ips.is_empty() {
            return Ok(ips.into_iter().map(|ip| SocketAddr::new(ip, port)).collect());
        }
    }
    Err(last.unwrap_or_else(|| err!(LlmUnavailable, "no address found for {:?}", host)))
}

/// The text of a small system file, empty if it cannot be read.
fn read_small(path: &str) -> String {
    let mut text = String::new();
    if let Ok(f) = std::fs::File::open(path) {
        // A file that is not UTF-8 reads as empty: its names could not be matched anyway.
        let _ = f.take(RESOLVE_FILE_MAX_BYTES).read_to_string(&mut text);
    }
    text
}

/// The addresses a hosts file lists for `name`, in file order.
fn in_hosts(text: &str, name: &str) -> Vec<IpAddr> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("");
        let mut words = line.split_ascii_whitespace();
        let Some(ip) = words.next().and_then(|w| w.parse::<IpAddr>().ok()) else { continue };
        if words.any(|w| crate::bytes::eq_fold(w.trim_end_matches('.').as_bytes(), name.as_bytes()))
            && !out.contains(&ip)
        {
            out.push(ip);
        }
    }
    out
}

/// Asks the name servers, in turn and `attempts` times over, for the `qtype` records of
/// `name`: the addresses of the first answer, none for a name that does not exist
/// (NXDOMAIN) or has no such records.
fn ask(name: &str, qtype: u16, conf: &Conf) -> Result<Vec<IpAddr>> {
    let id = query_id(name, qtype);
    let query = encode_query(id, name, qtype)?;
    let mut last = None;
    for _ in 0..conf.attempts {
        for &ns in &conf.nameservers {
            match exchange(ns, &query, conf.timeout).and_then(|answer| parse_answer(&answer, id, qtype)) {
                Ok(Answer::Found(ips)) => return Ok(ips),
                Ok(Answer::NoName) => return Ok(Vec::new()),
                Ok(Answer::Failed(rcode)) => {
                    last = Some(err!(
                        LlmUnavailable,
                        "the name server {} could not resolve {:?} (DNS error {})",
                        ns,
                        name,
                        rcode
                    ))
                }
                Err(e) => last = Some(e),
            }
        }
    }
    Err(last.unwrap_or_else(|| err!(LlmUnavailable, "no name server to ask for {:?}", name)))
}

/// Sends one query to `ns` and waits up to `timeout` for its answer.
fn exchange(ns: SocketAddr, query: &[u8], timeout: Duration) -> Result<Vec<u8>> {
    let any: SocketAddr =
        if ns.is_ipv4() { (Ipv4Addr::UNSPECIFIED, 0).into() } else { (Ipv6Addr::UNSPECIFIED, 0).into() };
    let fail = |what: &str, e: std::io::Error| err!(LlmUnavailable, "asking the name server {}: {}: {}", ns, what, e);
    let sock = UdpSocket::bind(any).map_err(|e| fail("cannot open a socket", e))?;
    // Connected: datagrams from any other address are not received.
    sock.connect(ns).map_err(|e| fail("cannot reach it", e))?;
    sock.set_read_timeout(Some(timeout)).map_err(|e| fail("cannot set the timeout", e))?;
    sock.send(query).map_err(|e| fail("cannot send the query", e))?;
    let mut buf = vec![0u8; DATAGRAM_BYTES];
    loop {
        match sock.recv(&mut buf) {
            Ok(n) => {
                buf.truncate(n);
                return Ok(buf);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                bail!(LlmTimeout, "the name server {} did not answer within {} ms", ns, crate::clock::millis(timeout))
            }
            Err(e) => return Err(fail("no answer", e)),
        }
    }
}

/// A query id that differs per query: the clock's nanoseconds, the name and the type hashed.
fn query_id(name: &str, qtype: u16) -> u16 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let h = name.bytes().fold(u32::from(qtype) ^ nanos, |h, b| h.rotate_left(5) ^ u32::from(b));
    (h ^ h >> 16) as u16
}

/// The query for `name`'s `qtype` records (recursion desired), at most 512 bytes.
fn encode_query(id: u16, name: &str, qtype: u16) -> Result<Vec<u8>> {
    let bad = || err!(LlmUnavailable, "{:?} is not a host name DNS can look up", name);
    // 253 bytes of name are at most 255 encoded: the message stays within one datagram.
    if name.is_empty() || name.len() > 253 {
        return Err(bad());
    }
    let mut msg: Vec<u8> = Vec::with_capacity(DATAGRAM_BYTES);
    msg.extend_from_slice(&id.to_be_bytes());
    msg.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]); // RD; one question
    for label in name.split('.') {
        let Ok(n) = u8::try_from(label.len()) else { return Err(bad()) };
        if n == 0 || n > 63 {
            return Err(bad());
        }
        msg.push(n);
        msg.extend_from_slice(label.as_bytes());
    }
    msg.push(0);
    msg.extend_from_slice(&qtype.to_be_bytes());
    msg.extend_from_slice(&CLASS_IN.to_be_bytes());
    Ok(msg)
}

/// What an answer said.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    /// The addresses of the type asked for (perhaps none: the name has other records only).
    Found(Vec<IpAddr>),
    /// The name does not exist (NXDOMAIN).
    NoName,
    /// Another response code (SERVFAIL, REFUSED, ...): the next server is asked.
    Failed(u8),
}

/// Reads an answer to the query `id` for `qtype` records (RFC 1035 §4.1): the header, the
/// questions skipped, then every answer record of that type and class IN (a CNAME's target's
/// addresses come in the same section).
fn parse_answer(msg: &[u8], id: u16, qtype: u16) -> Result<Answer> {
    let malformed = || err!(LlmUnavailable, "the name server's answer is malformed");
    let u16_at = |i: usize| msg.get(i..i + 2).and_then(|b| b.try_into().ok()).map(u16::from_be_bytes);
    let (Some(got_id), Some(flags), Some(qd), Some(an)) = (u16_at(0), u16_at(2), u16_at(4), u16_at(6)) else {
        return Err(malformed());
    };
    if got_id != id || flags & 0x8000 == 0 {
        return Err(malformed());
    }
    match (flags & 0x000f) as u8 {
        0 => {}
        3 => return Ok(Answer::NoName),
        rcode => return Ok(Answer::Failed(rcode)),
    }
    let mut i = 12;
    for _ in 0..qd {
        i = skip_name(msg, i).ok_or_else(malformed)? + 4;
    }
    let mut ips = Vec::new();
    for _ in 0..an {
        i = skip_name(msg, i).ok_or_else(malformed)?;
        let (Some(rtype), Some(class), Some(rdlen)) = (u16_at(i), u16_at(i + 2), u16_at(i + 8)) else {
            return Err(malformed());
        };
        let start = i + 10;
        let data = msg.get(start..start + usize::from(rdlen)).ok_or_else(malformed)?;
        if rtype == qtype && class == CLASS_IN {
            if let Ok(v4) = <[u8; 4]>::try_from(data) {
                ips.push(IpAddr::from(v4));
            } else if let Ok(v6) = <[u8; 16]>::try_from(data) {
                ips.push(IpAddr::from(v6));
            }
        }
        i = start + usize::from(rdlen);
    }
    Ok(Answer::Found(ips))
}

/// The offset after the (possibly compressed) name at `i`; `None` if it runs off the message.
fn skip_name(msg: &[u8], mut i: usize) -> Option<usize> {
    loop {
        let len = *msg.get(i)?;
        match len {
            0 => return Some(i + 1),
            l if l & 0xc0 == 0xc0 => return msg.get(i + 1).map(|_| i + 2),
            l if l & 0xc0 == 0 => i += usize::from(l) + 1,
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(ns: SocketAddr) -> Conf {
        Conf { nameservers: vec![ns], search: Vec::new(), ndots: 1, timeout: Duration::from_secs(2), attempts: 1 }
    }

    /// An answer to `query` with `records` (type, data) for its name, the name compressed.
    fn answer(query: &[u8], rcode: u8, records: &[(u16, &[u8])]) -> Vec<u8> {
        let mut m = query.to_vec();
        m[2] = 0x81;
        m[3] = 0x80 | rcode;
        m[6..8].copy_from_slice(&(records.len() as u16).to_be_bytes());
        for (t, data) in records {
            m.extend_from_slice(&[0xc0, 12]);
            m.extend_from_slice(&t.to_be_bytes());
            m.extend_from_slice(&[0, 1, 0, 0, 0, 60]);
            m.extend_from_slice(&(data.len() as u16).to_be_bytes());
            m.extend_from_slice(data);
        }
        m
    }

    #[test]
    fn test_emit_query() {
        let q = encode_query(0x1234, "llm.example", TYPE_A).unwrap();
        assert_eq!(q, b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x03llm\x07example\x00\x00\x01\x00\x01");
        for bad in ["", "a..b", ".a", &"x".repeat(64), &format!("{}.b", "a.".repeat(127))] {
            assert!(encode_query(1, bad, TYPE_A).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn test_parse_answer() {
        let q = encode_query(7, "llm.example", TYPE_A).unwrap();
        // A CNAME, then the target's address: only the A record is taken.
        let a = answer(&q, 0, &[(5, b"\x03www\xc0\x0c"), (TYPE_A, &[10, 0, 0, 7])]);
        assert_eq!(parse_answer(&a, 7, TYPE_A).unwrap(), Answer::Found(vec![IpAddr::from([10, 0, 0, 7])]));
        let six = [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let a = answer(&q, 0, &[(TYPE_AAAA, &six)]);
        assert_eq!(parse_answer(&a, 7, TYPE_AAAA).unwrap(), Answer::Found(vec![IpAddr::from(six)]));
        assert_eq!(parse_answer(&answer(&q, 3, &[]), 7, TYPE_A).unwrap(), Answer::NoName);
        assert_eq!(parse_answer(&answer(&q, 2, &[]), 7, TYPE_A).unwrap(), Answer::Failed(2));
        // Another id, a query instead of a response.
        assert!(parse_answer(&answer(&q, 0, &[]), 8, TYPE_A).is_err());
        assert!(parse_answer(&q, 7, TYPE_A).is_err());
    }

    #[test]
    fn test_truncated() {
        let q = encode_query(7, "llm.example", TYPE_A).unwrap();
        let a = answer(&q, 0, &[(TYPE_A, &[10, 0, 0, 7])]);
        for cut in 0..a.len() {
            assert!(parse_answer(&a[..cut], 7, TYPE_A).is_err(), "cut at {cut}");
        }
        // A name that points past the end, and a label of a reserved kind.
        assert_eq!(skip_name(b"\xc0", 0), None);
        assert_eq!(skip_name(b"\x40ab", 0), None);
        assert_eq!(skip_name(b"\x01a\x00", 0), Some(3));
    }

    #[test]
    fn test_parse_conf() {
        let c = Conf::parse(
            "# comment\nnameserver 10.0.0.2\nnameserver fe80::1 ; note\nnameserver bogus\nnameserver 10.0.0.3\n\
             nameserver 10.0.0.4\ndomain old.example\nsearch svc.cluster.local cluster.local.\n\
             options ndots:5 timeout:3 attempts:9 rotate\n",
        );
        let ns: Vec<String> = c.nameservers.iter().map(|a| a.to_string()).collect();
        assert_eq!(ns, ["10.0.0.2:53", "[fe80::1]:53", "10.0.0.3:53"]);
        assert_eq!(c.search, ["svc.cluster.local", "cluster.local"]);
        assert_eq!((c.ndots, c.timeout, c.attempts), (5, Duration::from_secs(3), 5));
        let empty = Conf::parse("");
        assert_eq!(empty.nameservers, [SocketAddr::from(([127, 0, 0, 1], 53))]);
        assert_eq!((empty.ndots, empty.timeout, empty.attempts), (1, Duration::from_secs(5), 2));
        assert_eq!(c.candidates("llm"), ["llm.svc.cluster.local", "llm.cluster.local", "llm"]);
        assert_eq!(
            c.candidates("llm.ns.svc.cluster.local"),
            [
                "llm.ns.svc.cluster.local.svc.cluster.local",
                "llm.ns.svc.cluster.local.cluster.local",
                "llm.ns.svc.cluster.local"
            ]
        );
        assert_eq!(c.candidates("llm.example."), ["llm.example"]);
        let one = Conf::parse("search lan\n");
        assert_eq!(one.candidates("a.b"), ["a.b", "a.b.lan"]);
        assert_eq!(one.candidates("box"), ["box.lan", "box"]);
    }

    #[test]
    fn hosts_file_then_localhost() {
        let hosts = "127.0.0.1 localhost\n::1 localhost ip6-localhost\n10.1.2.3 llm LLM.lan # the box\n\
                     10.1.2.4 llm\nnot-an-ip llm\n";
        let no_dns = conf(SocketAddr::from(([127, 0, 0, 1], 9)));
        let got = lookup_with("LLM", 8080, hosts, &no_dns).unwrap();
        assert_eq!(got, [SocketAddr::from(([10, 1, 2, 3], 8080)), SocketAddr::from(([10, 1, 2, 4], 8080))]);
        assert_eq!(lookup_with("llm.lan.", 1, hosts, &no_dns).unwrap(), [SocketAddr::from(([10, 1, 2, 3], 1))]);
        let loopback = [SocketAddr::from(([127, 0, 0, 1], 80)), SocketAddr::from((Ipv6Addr::LOCALHOST, 80))];
        assert_eq!(lookup_with("localhost", 80, hosts, &no_dns).unwrap(), loopback);
        assert_eq!(lookup_with("localhost", 80, "", &no_dns).unwrap(), loopback);
        assert_eq!(lookup_with("a.localhost", 80, "", &no_dns).unwrap(), loopback);
        assert_eq!(lookup_with("::1", 80, "", &no_dns).unwrap(), [loopback[1]]);
    }

    /// A name server on loopback that answers each query with `reply`'s records.
    fn server(
        answers: usize,
        rcode: u8,
        records: Vec<(u16, Vec<u8>)>,
    ) -> (SocketAddr, std::thread::JoinHandle<Vec<String>>) {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = sock.local_addr().unwrap();
        let h = std::thread::spawn(move || {
            let mut asked = Vec::new();
            let mut buf = [0u8; 512];
            for _ in 0..answers {
                let (n, from) = sock.recv_from(&mut buf).unwrap();
                let q = &buf[..n];
                let qtype = u16::from_be_bytes([q[n - 4], q[n - 3]]);
                let mut name = Vec::new();
                let mut i = 12;
                while q[i] != 0 {
                    name.push(String::from_utf8_lossy(&q[i + 1..i + 1 + q[i] as usize]).into_owned());
                    i += q[i] as usize + 1;
                }
                asked.push(format!("{} {}", name.join("."), qtype));
                let recs: Vec<(u16, &[u8])> =
                    records.iter().filter(|(t, _)| *t == qtype).map(|(t, d)| (*t, d.as_slice())).collect();
                sock.send_to(&answer(q, rcode, &recs), from).unwrap();
            }
            asked
        });
        (addr, h)
    }

    #[test]
    fn asks_a_name_server() {
        let (ns, h) =
            server(2, 0, vec![(TYPE_A, vec![10, 9, 8, 7]), (TYPE_AAAA, Ipv6Addr::LOCALHOST.octets().to_vec())]);
        let got = lookup_with("llm.example", 11434, "", &conf(ns)).unwrap();
        assert_eq!(got, [SocketAddr::from(([10, 9, 8, 7], 11434)), SocketAddr::from((Ipv6Addr::LOCALHOST, 11434))]);
        assert_eq!(h.join().unwrap(), ["llm.example 1", "llm.example 28"]);
    }

    #[test]
    fn a_name_that_does_not_exist_tries_the_next_search_domain() {
        let (ns, h) = server(4, 3, Vec::new());
        let mut c = conf(ns);
        c.search = vec!["lan".into()];
        let e = lookup_with("box", 80, "", &c).unwrap_err();
        assert!(e.message().to_string().contains("no address found for \"box\""), "{e}");
        assert_eq!(h.join().unwrap(), ["box.lan 1", "box.lan 28", "box 1", "box 28"]);
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_answers_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600)) {
            let _ = parse_answer(&bytes, 7, TYPE_A);
            let _ = skip_name(&bytes, 12);
        }

        #[test]
        fn mutated_answers_never_panic(at in 0usize..64, byte in proptest::prelude::any::<u8>(), cut in 0usize..80) {
            let q = encode_query(7, "llm.example", TYPE_A).unwrap();
            let mut a = answer(&q, 0, &[(5, b"\x03www\xc0\x0c"), (TYPE_A, &[10, 0, 0, 7])]);
            if let Some(b) = a.get_mut(at) {
                *b = byte;
            }
            a.truncate(a.len().saturating_sub(cut));
            let _ = parse_answer(&a, 7, TYPE_A);
        }

        #[test]
        fn arbitrary_config_files_never_panic(text in "\\PC{0,200}") {
            let c = Conf::parse(&text);
            proptest::prop_assert!(!c.nameservers.is_empty() && c.nameservers.len() <= 3);
            let _ = in_hosts(&text, "llm");
            let _ = c.candidates("llm");
        }
    }

    #[test]
    fn a_silent_name_server_times_out_once() {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut c = conf(sock.local_addr().unwrap());
        c.timeout = Duration::from_millis(50);
        c.search = vec!["lan".into(), "corp".into()];
        let e = lookup_with("llm", 80, "", &c).unwrap_err();
        assert!(e.message().to_string().contains("did not answer within 50 ms"), "{e}");
        // One question was asked (the A records of the first name), not one per name and type.
        sock.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 512];
        let mut asked = 0;
        while sock.recv_from(&mut buf).is_ok() {
            asked += 1;
        }
        assert_eq!(asked, 1);
    }
}
