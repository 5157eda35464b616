//! cloudflared's `/ready` answer, read defensively: a malformed answer is a
//! miss, never a crash.

use failover_core::node::Readiness;

use crate::client::{ProbeError, Response};

pub(crate) fn from_response(response: &Response) -> Readiness {
    if response.status != 200 {
        return Readiness::NotReady {
            status: response.status,
        };
    }
    let value: serde_json::Value = match serde_json::from_slice(&response.body) {
        Ok(value) => value,
        Err(_) => {
            return Readiness::Malformed {
                detail: "200 without a JSON body".into(),
            }
        }
    };
    match value
        .get("readyConnections")
        .and_then(serde_json::Value::as_u64)
    {
        // 200 with no live edge connection is not ready: readiness is about
        // serving, not about the process answering.
        Some(0) => Readiness::NotReady { status: 200 },
        Some(n) => Readiness::Ready {
            connections: u32::try_from(n).unwrap_or(u32::MAX),
        },
        None => Readiness::Malformed {
            detail: "200 without readyConnections".into(),
        },
    }
}

pub(crate) fn from_result(result: Result<Response, ProbeError>) -> Readiness {
    match result {
        Ok(response) => from_response(&response),
        Err(e) => Readiness::Unreachable {
            detail: e.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::body::Bytes;

    fn answer(status: u16, body: &'static str) -> Readiness {
        from_response(&Response {
            status,
            location: None,
            retry_after: None,
            tunnel_failover: None,
            served_by: false,
            body: Bytes::from_static(body.as_bytes()),
        })
    }

    #[test]
    fn reads_cloudflared_answers() {
        let ok = r#"{"status":200,"readyConnections":4,"connectorId":"x"}"#;
        assert_eq!(answer(200, ok), Readiness::Ready { connections: 4 });
        assert_eq!(
            answer(200, r#"{"status":200,"readyConnections":0}"#),
            Readiness::NotReady { status: 200 }
        );
        assert_eq!(
            answer(503, r#"{"status":503,"readyConnections":0}"#),
            Readiness::NotReady { status: 503 }
        );
        assert!(matches!(answer(200, "<html>"), Readiness::Malformed { .. }));
        assert!(matches!(
            answer(200, r#"{"readyConnections":"4"}"#),
            Readiness::Malformed { .. }
        ));
        assert_eq!(answer(404, ""), Readiness::NotReady { status: 404 });
    }
}
