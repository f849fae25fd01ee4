//! Loopback ports for processes the tests start, picked below the kernel's ephemeral range.
//!
//! Asking the kernel for port 0 hands out a port of the ephemeral range, the same range every outgoing
//! connection draws from. Between closing the probe and the child's bind, any of the many client
//! connections a parallel test run makes can take that port (seen in CI: "Address already in use").
//! Ports below the range are never given to outgoing connections, so only another picker can take
//! them; each picker starts at a different place (process id, time) to keep that rare too.

use std::net::TcpListener;
use std::time::{SystemTime, UNIX_EPOCH};

/// The lowest port picked: above the well-known and most registered services' ports.
const LOWEST: u16 = 20000;

/// `N` distinct loopback ports that were free a moment ago, none in the ephemeral range. All are held
/// open together while picking, so they differ; bind them soon.
pub fn free_loopback_ports<const N: usize>() -> std::io::Result<[u16; N]> {
    let highest = ephemeral_start().saturating_sub(1);
    if highest <= LOWEST + N as u16 * 16 {
        // No room below the range (an unusual host): let the kernel pick.
        let listeners = (0..N)
            .map(|_| TcpListener::bind("127.0.0.1:0"))
            .collect::<Result<Vec<_>, _>>()?;
        return ports_of(&listeners);
    }
    let span = u32::from(highest - LOWEST) + 1;
    let seed = std::process::id()
        ^ SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
    let start = seed.wrapping_mul(2_654_435_761) % span;
    let mut candidates = (0..span).map(|i| LOWEST + ((start + i) % span) as u16);
    let mut listeners = Vec::with_capacity(N);
    while listeners.len() < N {
        let Some(port) = candidates.next() else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AddrNotAvailable,
                format!("no free loopback port in {LOWEST}-{highest}"),
            ));
        };
        if let Ok(listener) = TcpListener::bind(("127.0.0.1", port)) {
            listeners.push(listener);
        }
    }
    ports_of(&listeners)
}

fn ports_of<const N: usize>(listeners: &[TcpListener]) -> std::io::Result<[u16; N]> {
    let mut ports = [0; N];
    for (port, listener) in ports.iter_mut().zip(listeners) {
        *port = listener.local_addr()?.port();
    }
    Ok(ports)
}

/// The first port of `net.ipv4.ip_local_port_range` (Linux's default when it cannot be read).
fn ephemeral_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_distinct_and_below_the_ephemeral_range() {
        let ports = free_loopback_ports::<8>().unwrap();
        let mut sorted = ports.to_vec();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 8, "{ports:?}");
        let start = ephemeral_start();
        if start > LOWEST + 8 * 16 {
            assert!(
                ports.iter().all(|p| (LOWEST..start).contains(p)),
                "{ports:?} (range from {start})"
            );
        }
        for port in ports {
            TcpListener::bind(("127.0.0.1", port)).expect("free once the picker let go");
        }
    }
}
