package io.skade.spark;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Spark SQL session driven over a pipe, the Spark side of skade's Spark tests. The session is
 * configured by {@code spark.*} system properties alone (Spark reads them into its conf).
 *
 * <p>Protocol, one JSON document a line: once the session is up it prints {@code "ready"}; then
 * for each line of standard input, a JSON string holding one SQL statement, it runs the
 * statement, collects its result and prints {@code {"rows": [[v, ...], ...]}}, each value a
 * string (Java's {@code String.valueOf} of Spark's external value: {@code Long}, {@code
 * BigDecimal}, {@code LocalDate}, ...) or {@code null}; or, when the statement fails, {@code
 * {"error": "<the exception>"}}, and the session goes on. It ends at the end of its input.
 * Standard output carries nothing else: whatever else prints to it is sent to standard error.
 */
public final class SqlSession {
  private static final Logger LOG = LoggerFactory.getLogger(SqlSession.class);

  private SqlSession() {}

  public static void main(String[] args) throws Exception {
    PrintStream protocol = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    System.setOut(System.err);
    ObjectMapper json = new ObjectMapper();
    try (SparkSession spark = SparkSession.builder().getOrCreate();
        BufferedReader statements = new BufferedReader(
            new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
      protocol.println(json.writeValueAsString("ready"));
      for (String line; (line = statements.readLine()) != null; ) {
        String sql = json.readValue(line, String.class);
        ObjectNode answer = json.createObjectNode();
        try {
          ArrayNode rows = answer.putArray("rows");
          for (Row row : spark.sql(sql).collectAsList()) {
            ArrayNode values = rows.addArray();
            for (int i = 0; i < row.length(); i++) {
              values.add(row.isNullAt(i) ? null : String.valueOf(row.get(i)));
            }
          }
        } catch (Exception e) {
          LOG.warn("statement failed: {}", sql, e);
          answer.removeAll();
          answer.put("error", e.toString());
        }
        protocol.println(json.writeValueAsString(answer));
      }
    }
  }
}
