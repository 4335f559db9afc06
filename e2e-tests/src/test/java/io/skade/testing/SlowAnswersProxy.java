package io.skade.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * A TCP proxy in front of a server that holds every byte of its answers for a fixed time before the
 * client gets it, in order, as a network with that one-way latency would: what the server says
 * reaches the client late, and the server's state may have moved on meanwhile.
 */
public final class SlowAnswersProxy implements AutoCloseable {
  private final ServerSocket listener;
  private final URI target;
  private final long delayNanos;

  /** A proxy to {@code target} ({@code http://host:port}) holding its answers for {@code delay}. */
  public SlowAnswersProxy(URI target, Duration delay) throws IOException {
    this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    this.target = target;
    this.delayNanos = delay.toNanos();
    daemon(this::accept, "slow-answers-proxy");
  }

  /** The proxy's address, to use in place of the target's. */
  public String uri() {
    return "http://127.0.0.1:" + listener.getLocalPort();
  }

  private void accept() {
    while (!listener.isClosed()) {
      try {
        Socket client = listener.accept();
        Socket server = new Socket(target.getHost(), target.getPort());
        client.setTcpNoDelay(true);
        server.setTcpNoDelay(true);
        daemon(() -> pump(client, server), "slow-answers-proxy request");
        BlockingQueue<Chunk> held = new LinkedBlockingQueue<>();
        daemon(() -> hold(server, client, held), "slow-answers-proxy answer");
        daemon(() -> release(held, client, server), "slow-answers-proxy release");
      } catch (IOException e) {
        return; // closed
      }
    }
  }

  private static void pump(Socket from, Socket to) {
    try (InputStream in = from.getInputStream();
        OutputStream out = to.getOutputStream()) {
      in.transferTo(out);
    } catch (IOException e) {
      // either side went away
    } finally {
      closeBoth(from, to);
    }
  }

  /** Reads the server's answers as they come, stamping each chunk with when it may go on. */
  private void hold(Socket server, Socket client, BlockingQueue<Chunk> held) {
    byte[] buffer = new byte[64 * 1024];
    try (InputStream in = server.getInputStream()) {
      for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
        held.add(new Chunk(System.nanoTime() + delayNanos, Arrays.copyOf(buffer, n)));
      }
    } catch (IOException e) {
      // either side went away
    } finally {
      held.add(new Chunk(System.nanoTime() + delayNanos, null));
    }
  }

  private static void release(BlockingQueue<Chunk> held, Socket client, Socket server) {
    try {
      OutputStream out = client.getOutputStream();
      while (true) {
        Chunk chunk = held.take();
        long wait = chunk.dueNanos() - System.nanoTime();
        if (wait > 0) {
          Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
        }
        if (chunk.bytes() == null) {
          return;
        }
        out.write(chunk.bytes());
        out.flush();
      }
    } catch (IOException | InterruptedException e) {
      // either side went away
    } finally {
      closeBoth(client, server);
    }
  }

  private static void closeBoth(Socket a, Socket b) {
    try {
      a.close();
      b.close();
    } catch (IOException e) {
      // already closed
    }
  }

  private static void daemon(Runnable work, String name) {
    Thread thread = new Thread(work, name);
    thread.setDaemon(true);
    thread.start();
  }

  private record Chunk(long dueNanos, byte[] bytes) {}

  @Override
  public void close() throws IOException {
    listener.close();
  }
}
