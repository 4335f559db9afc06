package io.skade.catalog;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.rocksdb.RocksDB;

/** The suite runs twice (see the pom): this proves which RocksDB Java binding each run loaded. */
class RocksDbFlavourTest {
  @Test
  void theRunLoadsTheRocksDbBindingItIsMeantToTest() {
    String expected = System.getProperty("skade.expected.rocksdb", "rocksdbjni");
    String jar = RocksDB.class.getProtectionDomain().getCodeSource().getLocation().getPath();
    assertThat(jar).contains("/" + expected + "-");
  }
}
