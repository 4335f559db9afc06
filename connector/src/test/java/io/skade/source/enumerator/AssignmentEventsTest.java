package io.skade.source.enumerator;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.scan.FileSlice;
import io.skade.source.split.ChangelogSplit;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Splits are assigned in events of bounded size, in order: a backlog of planned windows never goes
 * to a reader in one message larger than Flink's RPC carries.
 */
class AssignmentEventsTest {
  private static final long MAX = SkadeSplitEnumerator.MAX_EVENT_BYTES;

  @Test
  void plannedSplitsAreCutIntoEventsOfBoundedSizeInTheirOrder() {
    List<ChangelogSplit> splits = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      splits.add(split(i, 300 << 10));
    }
    List<List<ChangelogSplit>> events = SkadeSplitEnumerator.events(splits, MAX);

    assertThat(events).extracting(List::size).containsExactly(3, 3, 3, 1);
    assertThat(events.stream().flatMap(List::stream).toList()).isEqualTo(splits);
    for (List<ChangelogSplit> event : events) {
      assertThat(event.stream().mapToLong(s -> s.plan().length).sum()).isLessThanOrEqualTo(MAX);
    }
  }

  @Test
  void aSplitLargerThanAnEventGoesAloneAndSplitsWithoutPlansTogether() {
    List<ChangelogSplit> splits =
        List.of(split(0, 0), split(1, (int) MAX * 2), split(2, 0), split(3, 0));
    assertThat(SkadeSplitEnumerator.events(splits, MAX))
        .containsExactly(List.of(splits.get(0)), List.of(splits.get(1)), splits.subList(2, 4));

    List<ChangelogSplit> unplanned = new ArrayList<>();
    for (int i = 0; i < 1000; i++) {
      unplanned.add(split(i, -1));
    }
    assertThat(SkadeSplitEnumerator.events(unplanned, MAX)).containsExactly(unplanned);
  }

  /** The window ending at commit {@code seq}, with a plan of {@code planBytes} (-1: none). */
  private static ChangelogSplit split(long seq, int planBytes) {
    return new ChangelogSplit(
        "t",
        "/m.json",
        false,
        false,
        seq,
        seq + 1,
        seq,
        ChangelogSplit.UNKNOWN_TIME,
        FileSlice.ALL,
        0,
        planBytes < 0 ? null : new byte[planBytes]);
  }
}
