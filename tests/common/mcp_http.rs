//! A fake streamable-HTTP MCP server on loopback, just enough for a client to initialize, list
//! one tool (`shout`) and call it: JSON answers to POSTs, `202` to notifications, `405` to the
//! optional GET stream. It records the headers of every POST.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Lowercased header names and values of one request.
pub type Headers = Vec<(String, String)>;

#[derive(Clone, Default)]
pub struct McpHttp {
    /// The headers of each POST, in order.
    posts: Arc<Mutex<Vec<Headers>>>,
    /// The JSON-RPC message of each POST, in order.
    messages: Arc<Mutex<Vec<Value>>>,
}

impl McpHttp {
    /// Serves on 127.0.0.1; returns the server and its MCP endpoint URL.
    pub async fn start() -> (McpHttp, String) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let server = McpHttp::default();
        let accept = server.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let server = accept.clone();
                tokio::spawn(async move { server.serve(stream).await });
            }
        });
        (server, url)
    }

    pub fn posts(&self) -> Vec<Headers> {
        self.posts.lock().unwrap().clone()
    }

    pub fn messages(&self) -> Vec<Value> {
        self.messages.lock().unwrap().clone()
    }

    async fn serve(&self, mut stream: TcpStream) {
        let mut buf = Vec::new();
        let head_end = loop {
            if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break pos;
            }
            let mut chunk = [0u8; 4096];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let mut lines = head.lines();
        let method = lines
            .next()
            .unwrap_or_default()
            .split(' ')
            .next()
            .unwrap_or_default()
            .to_string();
        let headers: Headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let length: usize = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        let mut body = buf[head_end + 4..].to_vec();
        while body.len() < length {
            let mut chunk = [0u8; 4096];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => body.extend_from_slice(&chunk[..n]),
            }
        }
        let (status, reply) = match method.as_str() {
            "POST" => {
                self.posts.lock().unwrap().push(headers);
                let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                self.messages.lock().unwrap().push(message.clone());
                match answer(&message) {
                    Some(result) => ("200 OK", Some(result)),
                    None => ("202 Accepted", None),
                }
            }
            "DELETE" => ("200 OK", None),
            _ => ("405 Method Not Allowed", None),
        };
        let body = reply.map(|r| r.to_string()).unwrap_or_default();
        let response = format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\nmcp-session-id: fake-1\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = stream.write_all(response.as_bytes()).await;
        let _ = stream.shutdown().await;
    }
}

/// The JSON-RPC answer to a request; `None` for a notification.
fn answer(message: &Value) -> Option<Value> {
    let id = message.get("id")?.clone();
    let params = &message["params"];
    let result = match message["method"].as_str().unwrap_or_default() {
        "initialize" => json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "fake-http", "version": "0.1.0"}
        }),
        "tools/list" => json!({"tools": [{
            "name": "shout",
            "description": "Upper-cases its text.",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}
        }]}),
        "tools/call" => json!({"content": [{
            "type": "text",
            "text": params["arguments"]["text"].as_str().unwrap_or_default().to_uppercase()
        }]}),
        _ => {
            return Some(
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no such method"}}),
            );
        }
    };
    Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}
