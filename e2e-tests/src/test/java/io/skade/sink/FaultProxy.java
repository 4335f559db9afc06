package io.skade.sink;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A TCP proxy in front of a skade server that loses one HTTP exchange for real: the first request
 * whose head starts with {@code requestLine} either never reaches the server ({@link
 * Fault#REQUEST}) or reaches it and its answer never reaches the client ({@link Fault#ANSWER});
 * either way the client's connection is closed under it, as when the server's process dies.
 */
final class FaultProxy implements AutoCloseable {
  enum Fault {
    REQUEST,
    ANSWER
  }

  private final ServerSocket listener;
  private final URI target;
  private final String requestLine;
  private final Fault fault;

  /** Exchanges of {@code requestLine} that went wrong: at most one. */
  private final AtomicInteger lost = new AtomicInteger();

  FaultProxy(URI target, String requestLine, Fault fault) throws IOException {
    this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    this.target = target;
    this.requestLine = requestLine;
    this.fault = fault;
    Thread acceptor = new Thread(this::accept, "fault-proxy");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  String uri() {
    return "http://127.0.0.1:" + listener.getLocalPort();
  }

  /** How many exchanges it lost (0 or 1). */
  int lost() {
    return lost.get();
  }

  private void accept() {
    while (!listener.isClosed()) {
      try {
        Socket client = listener.accept();
        Socket server = new Socket(target.getHost(), target.getPort());
        Connection connection = new Connection(client, server);
        start(() -> connection.pump(client.getInputStream(), server.getOutputStream(), true));
        start(() -> connection.pump(server.getInputStream(), client.getOutputStream(), false));
      } catch (IOException e) {
        return; // closed
      }
    }
  }

  private static void start(IoTask task) {
    Thread thread =
        new Thread(
            () -> {
              try {
                task.run();
              } catch (IOException e) {
                // the other side closed
              }
            },
            "fault-proxy-pump");
    thread.setDaemon(true);
    thread.start();
  }

  private interface IoTask {
    void run() throws IOException;
  }

  /** One client connection and its connection to the server. */
  private final class Connection {
    private final Socket client;
    private final Socket server;

    /** Set once the chosen request went to the server: its answer is to be lost. */
    private volatile boolean answerToLose;

    Connection(Socket client, Socket server) {
      this.client = client;
      this.server = server;
    }

    void pump(InputStream in, OutputStream out, boolean request) throws IOException {
      byte[] buffer = new byte[65536];
      try {
        for (int n; (n = in.read(buffer)) > 0; ) {
          if (request
              && new String(buffer, 0, n, StandardCharsets.ISO_8859_1).startsWith(requestLine)
              && lost.compareAndSet(0, 1)) {
            if (fault == Fault.REQUEST) {
              return; // never sent on
            }
            answerToLose = true;
          } else if (!request && answerToLose) {
            return; // the server answered; the client never hears it
          }
          out.write(buffer, 0, n);
          out.flush();
        }
      } finally {
        client.close();
        server.close();
      }
    }
  }

  @Override
  public void close() throws IOException {
    listener.close();
  }
}
