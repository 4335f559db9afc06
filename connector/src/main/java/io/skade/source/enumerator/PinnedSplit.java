package io.skade.source.enumerator;

import io.skade.source.split.ChangelogSplit;

/**
 * A split and the reader it must go to: the reader its ordering unit is pinned to, so that one
 * reader emits every change of a key, in commit order.
 *
 * @param subtask the reader's subtask index (taken modulo the parallelism after a rescale)
 */
public record PinnedSplit(ChangelogSplit split, int subtask) {}
