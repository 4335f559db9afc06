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

/** The README's table of SQL options is the factory's options, with the same defaults. */
class ReadmeOptionsTest {
  private static final Pattern ROW =
      Pattern.compile("^\\| `([a-z.-]+)` \\| ([^|]+) \\|", Pattern.MULTILINE);

  @Test
  void theReadmeListsEveryOptionWithItsDefault() throws Exception {
    String readme = Files.readString(Path.of("..", "README.md"));
    String section = readme.substring(readme.indexOf("## Flink SQL"));
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
