//! A TCP relay on a loopback port in front of another address (the test's PostgreSQL), that a
//! test can cut — the listener closed and every relayed connection dropped, as a database that
//! stopped or a network that failed — and restore on the same port.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::task::AbortHandle;

pub struct TcpRelay {
    port: u16,
    target: SocketAddr,
    /// The accept loop and every relayed connection: aborted by [`TcpRelay::cut`].
    tasks: Arc<Mutex<Vec<AbortHandle>>>,
}

impl TcpRelay {
    /// Relays a new loopback port to `target`.
    pub async fn start(target: SocketAddr) -> TcpRelay {
        let listener = listen(0);
        let port = listener.local_addr().expect("relay address").port();
        let relay = TcpRelay { port, target, tasks: Arc::default() };
        relay.serve(listener);
        relay
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Closes the listener (a new connection is refused) and drops every relayed connection.
    pub fn cut(&self) {
        for task in self.tasks.lock().expect("relay tasks").drain(..) {
            task.abort();
        }
    }

    /// Listens again on the same port.
    pub fn restore(&self) {
        self.serve(listen(self.port));
    }

    fn serve(&self, listener: TcpListener) {
        let (target, tasks) = (self.target, self.tasks.clone());
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let relayed = tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                tasks.lock().expect("relay tasks").push(relayed.abort_handle());
            }
        });
        self.tasks.lock().expect("relay tasks").push(accept.abort_handle());
    }
}

impl Drop for TcpRelay {
    fn drop(&mut self) {
        self.cut();
    }
}

fn listen(port: u16) -> TcpListener {
    let socket = TcpSocket::new_v4().expect("socket");
    socket.set_reuseaddr(true).expect("SO_REUSEADDR");
    socket.bind(SocketAddr::from(([127, 0, 0, 1], port))).expect("the relay's port");
    socket.listen(64).expect("listen")
}
