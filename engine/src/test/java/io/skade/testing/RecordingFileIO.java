package io.skade.testing;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.apache.iceberg.io.InputFile;

/** Hadoop's file IO, recording every file opened through this instance. */
@SuppressWarnings("serial")
public final class RecordingFileIO extends HadoopFileIO {
  /** The paths opened, in no order. */
  public final Set<String> opened = ConcurrentHashMap.newKeySet();

  public RecordingFileIO() {
    super(new Configuration());
  }

  @Override
  public InputFile newInputFile(String path) {
    opened.add(path);
    return super.newInputFile(path);
  }

  @Override
  public InputFile newInputFile(String path, long length) {
    opened.add(path);
    return super.newInputFile(path, length);
  }
}
