package io.skade.catalog;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system ({@code file:} URIs) as skade's default Hadoop configuration names it,
 * setting a file's permissions with a system call rather than a {@code chmod} process.
 *
 * <p>Without Hadoop's native library, which is not on Maven Central, {@link RawLocalFileSystem}
 * starts a {@code chmod} process for every file it creates (and one more for its checksum file):
 * two processes per file an Iceberg commit writes. A process started from a large JVM costs
 * milliseconds, and a process still starting when its parent is killed can hold the parent's
 * standard streams open after the parent died.
 */
public final class SkadeLocalFileSystem extends LocalFileSystem {
  /** What Hadoop calls when a configuration names this class in {@code fs.file.impl}. */
  public SkadeLocalFileSystem() {
    super(new Raw());
  }

  /** The file system under the checksums: the same, but for how permissions are set. */
  static final class Raw extends RawLocalFileSystem {
    private static final PosixFilePermission[] BITS = {
      PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE,
      PosixFilePermission.OTHERS_READ, PosixFilePermission.GROUP_EXECUTE,
      PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
      PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE,
      PosixFilePermission.OWNER_READ
    };

    @Override
    public void setPermission(Path p, FsPermission permission) throws IOException {
      Set<PosixFilePermission> posix = EnumSet.noneOf(PosixFilePermission.class);
      int mode = permission.toShort();
      for (int bit = 0; bit < BITS.length; bit++) {
        if ((mode & (1 << bit)) != 0) {
          posix.add(BITS[bit]);
        }
      }
      try {
        Files.setPosixFilePermissions(pathToFile(p).toPath(), posix);
      } catch (UnsupportedOperationException notPosix) {
        super.setPermission(p, permission);
      }
    }
  }
}
