//! One client connection: read requests, deliver their replies, keep alive between them.

use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

use crate::http::{ReadError, read_request, reason_phrase};
use crate::reply::{Reply, Step};
use crate::server::Shared;

/// What the connection does after a reply.
enum After {
    KeepAlive,
    Close,
}

/// How a streamed body ended.
enum StreamEnd {
    Completed,
    Disconnect,
    PeerGone,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Framing {
    Chunked,
    UntilClose,
}

/// Serves requests on `stream` until either side closes it.
pub(crate) async fn serve(stream: TcpStream, shared: Arc<Shared>) {
    // Each step's bytes should leave at once, not wait for Nagle.
    let _ = stream.set_nodelay(true);
    let (mut reader, mut writer) = stream.into_split();
    let mut buf = Vec::new();
    loop {
        let request = match read_request(&mut reader, &mut buf).await {
            Ok(request) => request,
            Err(ReadError::Malformed(why)) => {
                let _ = write_status(&mut writer, 400, &[], why, true).await;
                return;
            }
            Err(ReadError::Closed) => return,
        };
        let close = request.wants_close();
        let (index, reply) = shared.route(&request);
        let mut io = Io {
            reader: &mut reader,
            writer: &mut writer,
            shared: &shared,
            request: index,
        };
        match deliver(reply, close, &mut io).await {
            After::KeepAlive if !close => {}
            _ => return,
        }
    }
}

/// The connection's two halves, and what a reply records as it goes.
struct Io<'a> {
    reader: &'a mut OwnedReadHalf,
    writer: &'a mut OwnedWriteHalf,
    shared: &'a Shared,
    /// Index of the request being answered, in [`crate::FakeServer::requests`].
    request: usize,
}

async fn deliver(mut reply: Reply, close: bool, io: &mut Io<'_>) -> After {
    while let Reply::Delayed {
        delay,
        reply: inner,
    } = reply
    {
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = peer_closed(io.reader) => {
                io.shared.note_dropped();
                return After::Close;
            }
        }
        reply = *inner;
    }
    match reply {
        Reply::Status {
            code,
            headers,
            body,
        } => match write_status(io.writer, code, &headers, &body, close).await {
            Ok(()) => After::KeepAlive,
            Err(_) => After::Close,
        },
        Reply::Sse(steps) => stream_body(&steps, Framing::Chunked, SSE, io).await,
        Reply::SseUntilClose(steps) => stream_body(&steps, Framing::UntilClose, SSE, io).await,
        Reply::Ndjson(steps) => stream_body(&steps, Framing::Chunked, NDJSON, io).await,
        // Unwrapped by the loop above.
        Reply::Delayed { .. } => After::Close,
    }
}

async fn write_status(
    writer: &mut OwnedWriteHalf,
    code: u16,
    headers: &[(String, String)],
    body: &str,
    close: bool,
) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {code} {}\r\n", reason_phrase(code));
    let has_type = headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("content-type"));
    if !has_type {
        let json = serde_json::from_str::<serde_json::Value>(body).is_ok();
        let kind = if json {
            "application/json"
        } else {
            "text/plain; charset=utf-8"
        };
        head.push_str(&format!("content-type: {kind}\r\n"));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if close {
        head.push_str("connection: close\r\n");
    }
    head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
    head.push_str(body);
    writer.write_all(head.as_bytes()).await?;
    writer.flush().await
}

/// The content type of a streamed body.
const SSE: &str = "text/event-stream";
const NDJSON: &str = "application/x-ndjson";

async fn stream_body(
    steps: &[Step],
    framing: Framing,
    content_type: &str,
    io: &mut Io<'_>,
) -> After {
    let (shared, request) = (io.shared, io.request);
    let mut written = |step| shared.note_written(request, step);
    // Watching the read half while writing is what notices a client that went away during a
    // pause or a hang: writes alone can succeed into the socket buffer for a long time.
    let end = tokio::select! {
        end = write_steps(steps, framing, content_type, io.writer, &mut written) => end,
        () = peer_closed(io.reader) => StreamEnd::PeerGone,
    };
    match end {
        StreamEnd::Completed if framing == Framing::Chunked => {
            match io.writer.write_all(b"0\r\n\r\n").await {
                Ok(()) => After::KeepAlive,
                Err(_) => After::Close,
            }
        }
        StreamEnd::Completed => {
            let _ = io.writer.shutdown().await;
            After::Close
        }
        StreamEnd::Disconnect => After::Close,
        StreamEnd::PeerGone => {
            shared.note_dropped();
            After::Close
        }
    }
}

/// Writes the head and every step; `written(i)` is called as step `i`'s bytes have gone out.
async fn write_steps(
    steps: &[Step],
    framing: Framing,
    content_type: &str,
    writer: &mut OwnedWriteHalf,
    written: &mut impl FnMut(usize),
) -> StreamEnd {
    let mut head =
        format!("HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncache-control: no-cache\r\n");
    head.push_str(match framing {
        Framing::Chunked => "transfer-encoding: chunked\r\n\r\n",
        Framing::UntilClose => "connection: close\r\n\r\n",
    });
    if writer.write_all(head.as_bytes()).await.is_err() {
        return StreamEnd::PeerGone;
    }
    for (i, step) in steps.iter().enumerate() {
        match step {
            Step::Bytes(bytes) if bytes.is_empty() => {}
            Step::Bytes(bytes) => {
                if write_piece(writer, bytes, framing).await.is_err() {
                    return StreamEnd::PeerGone;
                }
                written(i);
            }
            Step::Pause(pause) => tokio::time::sleep(*pause).await,
            Step::Hang => std::future::pending::<()>().await,
            Step::Disconnect => return StreamEnd::Disconnect,
        }
    }
    StreamEnd::Completed
}

async fn write_piece(
    writer: &mut OwnedWriteHalf,
    bytes: &[u8],
    framing: Framing,
) -> std::io::Result<()> {
    match framing {
        Framing::Chunked => {
            let mut piece = format!("{:x}\r\n", bytes.len()).into_bytes();
            piece.extend_from_slice(bytes);
            piece.extend_from_slice(b"\r\n");
            writer.write_all(&piece).await?;
        }
        Framing::UntilClose => writer.write_all(bytes).await?,
    }
    writer.flush().await
}

/// Resolves once the peer has closed or reset the connection. Bytes it sends meanwhile are
/// discarded (HTTP/1.1 clients do not pipeline while a response is in flight).
async fn peer_closed(reader: &mut OwnedReadHalf) {
    let mut scratch = [0u8; 1024];
    loop {
        match reader.read(&mut scratch).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}
