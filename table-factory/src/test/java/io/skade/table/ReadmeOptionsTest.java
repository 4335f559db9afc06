package io.skade.table;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.flink.configuration.ConfigOption;
import org.junit.jupiter.api.Test;

/**
 * The table of SQL options in docs/sql.md (the page the README links for the SQL surface) is the
 * factory's options, with the same defaults.
 */
class ReadmeOptionsTest {
  private static final Pattern ROW =
      Pattern.compile("^\\| `([a-z.-]+)` \\| ([^|]+) \\|", Pattern.MULTILINE);

  @Test
  void theSqlPageListsEveryOptionWithItsDefault() throws Exception {
    String page = Files.readString(Path.of("..", "docs", "sql.md"));
    int start = page.indexOf("\n## Options\n");
    assertThat(start).as("docs/sql.md has a section '## Options'").isNotNegative();
    int end = page.indexOf("\n## ", start + 1);
    String section = page.substring(start, end < 0 ? page.length() : end);
    Map<String, String> documented = new LinkedHashMap<>();
    Matcher row = ROW.matcher(section);
    while (row.find()) {
      documented.put(row.group(1), row.group(2).trim());
    }

    SkadeDynamicTableFactory factory = new SkadeDynamicTableFactory();
    Map<String, ConfigOption<?>> declared = new LinkedHashMap<>();
    for (Set<ConfigOption<?>> options :
        List.of(factory.requiredOptions(), factory.optionalOptions())) {
      options.forEach(option -> declared.put(option.key(), option));
    }
    assertThat(documented.keySet()).containsExactlyInAnyOrderElementsOf(declared.keySet());
    for (ConfigOption<?> option : declared.values()) {
      if (option.hasDefaultValue() && option.defaultValue() instanceof String
          || option.defaultValue() instanceof Boolean) {
        assertThat(documented.get(option.key()))
            .as(option.key())
            .isEqualTo("`" + option.defaultValue() + "`");
      }
    }
  }
}
