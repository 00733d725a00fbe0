//! Just enough HTTP/1.1 to read a request and write the response head.

use tokio::io::{AsyncRead, AsyncReadExt};

const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 64 * 1024 * 1024;

/// One request as read off the wire.
pub(crate) struct Request {
    pub method: String,
    /// The request target without its query string.
    pub path: String,
    /// Header names lowercased, values trimmed, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the client asked to close the connection after this exchange.
    pub fn wants_close(&self) -> bool {
        self.header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"))
    }
}

/// Why no request could be read.
pub(crate) enum ReadError {
    /// The peer closed (or reset) the connection; nothing to answer.
    Closed,
    /// The bytes are not a request this server understands; answer 400 and close.
    Malformed(&'static str),
}

/// Reads one request. `buf` carries bytes read past the end of a request to the next call.
pub(crate) async fn read_request<R: AsyncRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
) -> Result<Request, ReadError> {
    let head_end = loop {
        if let Some(pos) = find(buf, b"\r\n\r\n") {
            break pos;
        }
        if buf.len() > MAX_HEAD {
            return Err(ReadError::Malformed("request head too large"));
        }
        fill(reader, buf).await?;
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    buf.drain(..head_end + 4);
    let mut request = parse_head(&head)?;
    if request
        .header("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"))
    {
        return Err(ReadError::Malformed(
            "chunked request bodies are not supported",
        ));
    }
    let len = match request.header("content-length") {
        None => 0,
        Some(v) => v
            .parse::<usize>()
            .map_err(|_| ReadError::Malformed("bad content-length"))?,
    };
    if len > MAX_BODY {
        return Err(ReadError::Malformed("request body too large"));
    }
    while buf.len() < len {
        fill(reader, buf).await?;
    }
    request.body = buf.drain(..len).collect();
    Ok(request)
}

async fn fill<R: AsyncRead + Unpin>(reader: &mut R, buf: &mut Vec<u8>) -> Result<(), ReadError> {
    let mut tmp = [0u8; 16 * 1024];
    match reader.read(&mut tmp).await {
        Ok(0) | Err(_) => Err(ReadError::Closed),
        Ok(n) => {
            buf.extend_from_slice(&tmp[..n]);
            Ok(())
        }
    }
}

fn parse_head(head: &str) -> Result<Request, ReadError> {
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or_default().split(' ');
    let (Some(method), Some(target), Some(version)) = (first.next(), first.next(), first.next())
    else {
        return Err(ReadError::Malformed("bad request line"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(ReadError::Malformed("only HTTP/1.x is spoken here"));
    }
    let mut headers = Vec::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(ReadError::Malformed("bad header line"));
        };
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let path = target.split('?').next().unwrap_or_default().to_string();
    Ok(Request {
        method: method.to_string(),
        path,
        headers,
        body: Vec::new(),
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The reason phrase for the status codes tests use; anything else gets a generic one.
pub(crate) fn reason_phrase(code: u16) -> &'static str {
    match code {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}
