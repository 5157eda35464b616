//! The systemd notify protocol (`Type=notify`, `WatchdogSec=`): one datagram
//! to $NOTIFY_SOCKET per state. No-op when not started by systemd.

use std::os::unix::net::UnixDatagram;
use std::time::Duration;

pub(crate) fn notify(state: &str) {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    let Ok(socket) = UnixDatagram::unbound() else {
        return;
    };
    let bytes = path.as_encoded_bytes();
    let sent = if let Some(name) = bytes.strip_prefix(b"@") {
        abstract_addr(name).and_then(|addr| socket.send_to_addr(state.as_bytes(), &addr).ok())
    } else {
        socket.send_to(state.as_bytes(), &path).ok()
    };
    if sent.is_none() {
        crate::log::warn(&format!(
            "sd_notify {state:?} to {} failed",
            path.to_string_lossy()
        ));
    }
}

#[cfg(target_os = "linux")]
fn abstract_addr(name: &[u8]) -> Option<std::os::unix::net::SocketAddr> {
    use std::os::linux::net::SocketAddrExt;
    std::os::unix::net::SocketAddr::from_abstract_name(name).ok()
}

#[cfg(not(target_os = "linux"))]
fn abstract_addr(_name: &[u8]) -> Option<std::os::unix::net::SocketAddr> {
    None
}

/// Half of `WatchdogSec=`, when systemd asked for watchdog pings.
pub fn watchdog_period() -> Option<Duration> {
    let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.parse().ok()?;
    if let Ok(pid) = std::env::var("WATCHDOG_PID") {
        if pid.parse::<u32>().ok()? != std::process::id() {
            return None;
        }
    }
    (usec > 0).then(|| Duration::from_micros(usec / 2))
}
