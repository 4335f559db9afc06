package io.skade.testing;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;

/**
 * A TCP proxy in front of an S3 server that reads each request's head as it passes, so that tests
 * can count requests (ranged GETs, bytes asked for) and inject what object storage does for real: a
 * fixed delay before each request reaches the server (time to first byte), a bandwidth cap on
 * answers, {@code 503 SlowDown} answers, and connections reset in the middle of an exchange.
 *
 * <p>Request bodies are skipped by their {@code Content-Length}, which the AWS SDK always sends; a
 * connection whose request is {@code Transfer-Encoding: chunked} is passed through unread from then
 * on (its later requests are neither counted nor faulted).
 */
public final class S3FaultProxy implements AutoCloseable {
  /**
   * One request as it passed: its method, path (with query), {@code Range} header (null if none),
   * and which attempt of its call it is, as the AWS SDK numbers them in its {@code amz-sdk-request:
   * attempt=N} header (0 when a client sends none).
   */
  public record Request(String method, String path, String range, int attempt) {
    /** Whether this is a GET of a byte range. */
    public boolean rangedGet() {
      return method.equals("GET") && range != null;
    }

    /** The bytes its {@code Range: bytes=a-b} asks for; -1 for an open or absent range. */
    public long rangeLength() {
      if (range == null || !range.startsWith("bytes=")) {
        return -1;
      }
      String[] bounds = range.substring("bytes=".length()).split("-", 2);
      if (bounds[0].isEmpty() || bounds.length < 2 || bounds[1].isEmpty()) {
        return -1;
      }
      return Long.parseLong(bounds[1].trim()) - Long.parseLong(bounds[0].trim()) + 1;
    }
  }

  private final ServerSocket listener;
  private final URI target;
  private final List<Request> requests = new CopyOnWriteArrayList<>();
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();
  private volatile long delayMillis;
  private volatile long bytesPerSecond;
  private final AtomicInteger slowDowns = new AtomicInteger();
  private final AtomicInteger resets = new AtomicInteger();
  private volatile Predicate<Request> faulted = request -> true;
  private final AtomicInteger held = new AtomicInteger();
  private final AtomicInteger mostHeld = new AtomicInteger();

  /** A proxy on a free loopback port in front of {@code target} ({@code http://host:port}). */
  public S3FaultProxy(URI target) throws IOException {
    this.listener = new ServerSocket(0, 200, InetAddress.getLoopbackAddress());
    this.target = target;
    Thread acceptor = new Thread(this::accept, "s3-proxy-" + listener.getLocalPort());
    acceptor.setDaemon(true);
    acceptor.start();
  }

  /** {@code http://127.0.0.1:<port>}: the endpoint clients are given. */
  public URI endpoint() {
    return URI.create("http://127.0.0.1:" + listener.getLocalPort());
  }

  /** Holds every request this long before it reaches the server (0: none). */
  public S3FaultProxy delay(long millis) {
    this.delayMillis = millis;
    return this;
  }

  /** Caps each connection's answers to this many bytes a second (0: no cap). */
  public S3FaultProxy bandwidth(long bytesPerSecond) {
    this.bytesPerSecond = bytesPerSecond;
    return this;
  }

  /** Which requests the faults below may hit (default: every request). */
  public S3FaultProxy faultOnly(Predicate<Request> which) {
    this.faulted = which;
    return this;
  }

  /** The next {@code count} faultable requests are answered {@code 503 SlowDown} by the proxy. */
  public S3FaultProxy slowDown(int count) {
    slowDowns.addAndGet(count);
    return this;
  }

  /** The next {@code count} faultable requests have their connection reset (TCP RST). */
  public S3FaultProxy reset(int count) {
    resets.addAndGet(count);
    return this;
  }

  /** Every request seen so far, faulted ones included, in arrival order. */
  public List<Request> requests() {
    return List.copyOf(requests);
  }

  /** Forgets the requests seen so far, and the most held at once. */
  public void clearRequests() {
    requests.clear();
    mostHeld.set(0);
  }

  /**
   * The most requests {@link #delay} held at the same time since the last {@link #clearRequests}:
   * above one only when clients had several requests out at once.
   */
  public int mostHeldAtOnce() {
    return mostHeld.get();
  }

  /** How many faults are still to be injected (503s and resets). */
  public int faultsPending() {
    return slowDowns.get() + resets.get();
  }

  private void accept() {
    while (!listener.isClosed()) {
      try {
        Socket client = listener.accept();
        Socket server = new Socket(target.getHost(), target.getPort());
        client.setTcpNoDelay(true);
        server.setTcpNoDelay(true);
        sockets.add(client);
        sockets.add(server);
        start(() -> requests(client, server));
        start(() -> answers(server, client));
      } catch (IOException e) {
        if (!listener.isClosed()) {
          e.printStackTrace();
        }
      }
    }
  }

  private static void start(Runnable pump) {
    Thread thread = new Thread(pump, "s3-proxy-pump");
    thread.setDaemon(true);
    thread.start();
  }

  /** Client to server: request by request, each head read, counted and maybe faulted. */
  private void requests(Socket client, Socket server) {
    try (client;
        server) {
      InputStream in = client.getInputStream();
      OutputStream out = server.getOutputStream();
      while (true) {
        byte[] head = readHead(in);
        if (head == null) {
          return;
        }
        Head parsed = Head.parse(head);
        Request request =
            new Request(parsed.method, parsed.path, parsed.header("range"), parsed.attempt());
        requests.add(request);
        if (faulted.test(request) && take(resets)) {
          client.setSoLinger(true, 0); // close sends RST
          server.setSoLinger(true, 0);
          return;
        }
        if (faulted.test(request) && take(slowDowns)) {
          answerSlowDown(client.getOutputStream(), request);
          return; // Connection: close, the body (if any) left unread
        }
        if (delayMillis > 0) {
          mostHeld.accumulateAndGet(held.incrementAndGet(), Math::max);
          try {
            Thread.sleep(delayMillis);
          } finally {
            held.decrementAndGet();
          }
        }
        out.write(head);
        if (parsed.header("transfer-encoding") != null) {
          in.transferTo(out); // chunked: passed through unread from here on
          return;
        }
        String length = parsed.header("content-length");
        long remaining = length == null ? 0 : Long.parseLong(length.trim());
        byte[] buffer = new byte[64 << 10];
        while (remaining > 0) {
          int read = in.read(buffer, 0, (int) Math.min(buffer.length, remaining));
          if (read < 0) {
            return;
          }
          out.write(buffer, 0, read);
          remaining -= read;
        }
        out.flush();
      }
    } catch (IOException e) {
      // a side closed: the other is closed with it
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Server to client: bytes as they come, paced when a bandwidth cap is set. */
  private void answers(Socket server, Socket client) {
    try {
      InputStream in = server.getInputStream();
      OutputStream out = client.getOutputStream();
      byte[] buffer = new byte[16 << 10];
      long paced = System.nanoTime(); // when the bytes sent so far are due under the cap
      int read;
      while ((read = in.read(buffer)) >= 0) {
        out.write(buffer, 0, read);
        out.flush();
        long cap = bytesPerSecond;
        if (cap > 0) {
          // the time owed is kept in nanoseconds across chunks, so a cap above one chunk per
          // millisecond still paces instead of rounding every sleep down to nothing
          paced = Math.max(paced, System.nanoTime() - 1_000_000L) + read * 1_000_000_000L / cap;
          long ahead = paced - System.nanoTime();
          if (ahead > 0) {
            Thread.sleep(ahead / 1_000_000L, (int) (ahead % 1_000_000L));
          }
        }
      }
    } catch (IOException e) {
      // a side closed
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      try {
        client.shutdownOutput();
      } catch (IOException e) {
        // already closed
      }
    }
  }

  private static boolean take(AtomicInteger counter) {
    return counter.getAndUpdate(n -> n > 0 ? n - 1 : 0) > 0;
  }

  private static void answerSlowDown(OutputStream out, Request request) throws IOException {
    String body =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SlowDown</Code><Message>Please"
            + " reduce your request rate.</Message><Resource>"
            + request.path()
            + "</Resource><RequestId>s3-proxy</RequestId></Error>";
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    String head =
        "HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nContent-Length: "
            + bytes.length
            + "\r\nConnection: close\r\n\r\n";
    out.write(head.getBytes(StandardCharsets.US_ASCII));
    out.write(bytes);
    out.flush();
  }

  /** A request head up to and including its blank line; null at the end of the stream. */
  private static byte[] readHead(InputStream in) throws IOException {
    ByteArrayOutputStream head = new ByteArrayOutputStream(1024);
    int matched = 0;
    int b;
    while ((b = in.read()) >= 0) {
      head.write(b);
      matched =
          (b == '\r' && matched % 2 == 0) || (b == '\n' && matched % 2 == 1) ? matched + 1 : 0;
      if (matched == 4) {
        return head.toByteArray();
      }
    }
    return null;
  }

  private record Head(String method, String path, List<String[]> headers) {
    static Head parse(byte[] bytes) {
      String[] lines = new String(bytes, StandardCharsets.ISO_8859_1).split("\r\n");
      String[] requestLine = lines[0].split(" ");
      List<String[]> headers = new ArrayList<>();
      for (int i = 1; i < lines.length; i++) {
        int colon = lines[i].indexOf(':');
        if (colon > 0) {
          headers.add(
              new String[] {
                lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT),
                lines[i].substring(colon + 1).trim()
              });
        }
      }
      return new Head(requestLine[0], requestLine.length > 1 ? requestLine[1] : "", headers);
    }

    /** The attempt in the AWS SDK's {@code amz-sdk-request: attempt=N; max=M}; 0 without it. */
    int attempt() {
      String value = header("amz-sdk-request");
      if (value != null) {
        for (String part : value.split(";")) {
          String[] pair = part.trim().split("=", 2);
          if (pair.length == 2 && pair[0].equals("attempt")) {
            return Integer.parseInt(pair[1].trim());
          }
        }
      }
      return 0;
    }

    String header(String name) {
      for (String[] header : headers) {
        if (header[0].equals(name)) {
          return header[1];
        }
      }
      return null;
    }
  }

  @Override
  public void close() throws IOException {
    listener.close();
    for (Socket socket : sockets) {
      socket.close();
    }
  }
}
