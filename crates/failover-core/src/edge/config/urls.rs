//! An origin's `url`: `http(s)://host[:port]`, nothing else (no path, no
//! credentials), normalised so that one origin has one spelling.

/// Accepts `http(s)://host[:port]` with an optional trailing `/`; returns it
/// normalised (lower-case scheme and host, no trailing slash).
pub(super) fn parse_base_url(url: &str) -> Result<String, &'static str> {
    let lower = url.to_ascii_lowercase();
    let (scheme, rest) = if let Some(rest) = lower.strip_prefix("https://") {
        ("https", rest)
    } else if let Some(rest) = lower.strip_prefix("http://") {
        ("http", rest)
    } else {
        return Err("must start with http:// or https://");
    };
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.contains('@') {
        return Err("must not contain credentials (user@host)");
    }
    if authority.contains(['/', '\\', '?', '#']) {
        return Err("must not have a path, query or fragment; requests keep their own path");
    }
    let (host, port) = split_port(authority)?;
    let host_ok = if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        !v6.is_empty()
            && v6
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
    } else {
        !host.is_empty()
            && !host.starts_with(['.', '-'])
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
    };
    if !host_ok {
        return Err("has no valid host name");
    }
    if let Some(port) = port {
        match port.parse::<u16>() {
            Ok(p) if p > 0 => {}
            _ => return Err("has an invalid port; expected 1-65535"),
        }
    }
    Ok(format!("{scheme}://{authority}"))
}

fn split_port(authority: &str) -> Result<(&str, Option<&str>), &'static str> {
    if authority.starts_with('[') {
        return match authority.find(']') {
            Some(end) if end + 1 == authority.len() => Ok((authority, None)),
            Some(end) => match authority[end + 1..].strip_prefix(':') {
                Some(port) => Ok((&authority[..=end], Some(port))),
                None => Err("has no valid host name"),
            },
            None => Err("has no valid host name"),
        };
    }
    Ok(match authority.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    })
}
