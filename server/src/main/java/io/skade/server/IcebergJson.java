package io.skade.server;

import com.fasterxml.jackson.annotation.JsonAutoDetect;
import com.fasterxml.jackson.annotation.PropertyAccessor;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonFactoryBuilder;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import org.apache.iceberg.rest.RESTSerializers;

/**
 * The JSON of the Iceberg REST protocol: Iceberg's own request and response classes, written and
 * read by Iceberg's serializers ({@link RESTSerializers}) on a mapper set up as Iceberg's client
 * sets up its own (kebab-case fields, unknown fields ignored).
 */
final class IcebergJson {
  private static final ObjectMapper MAPPER = mapper();

  private IcebergJson() {}

  private static ObjectMapper mapper() {
    JsonFactory factory =
        new JsonFactoryBuilder()
            .configure(JsonFactory.Feature.INTERN_FIELD_NAMES, false)
            .configure(JsonFactory.Feature.FAIL_ON_SYMBOL_HASH_OVERFLOW, false)
            .build();
    ObjectMapper mapper = new ObjectMapper(factory);
    mapper.setVisibility(PropertyAccessor.FIELD, JsonAutoDetect.Visibility.ANY);
    mapper.configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);
    mapper.setPropertyNamingStrategy(new PropertyNamingStrategies.KebabCaseStrategy());
    RESTSerializers.registerAll(mapper);
    return mapper;
  }

  /** The JSON of a protocol message. */
  static String write(Object message) {
    try {
      return MAPPER.writeValueAsString(message);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot write the JSON of " + message, e);
    }
  }

  /**
   * A protocol message read from a request body.
   *
   * @throws IllegalArgumentException naming the message and what is wrong with the JSON
   */
  static <T> T read(String json, Class<T> type) {
    String expected = type.getSimpleName();
    if (json.isBlank()) {
      throw new IllegalArgumentException(
          "the request needs a JSON body (" + expected + "); it was empty");
    }
    JsonNode tree;
    try {
      tree = MAPPER.readTree(json);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException(
          "the request body is not valid JSON (" + expected + "): " + e.getOriginalMessage(), e);
    }
    if (tree == null || !tree.isObject()) { // some deserializers read any value as empty
      throw new IllegalArgumentException(
          "the request body must be a JSON object ("
              + expected
              + "), got: "
              + (json.length() > 100 ? json.substring(0, 100) + "…" : json));
    }
    try {
      return MAPPER.treeToValue(tree, type);
    } catch (JsonProcessingException | RuntimeException e) {
      // Iceberg's deserializers check fields with Preconditions and cast JSON nodes: a body of
      // the wrong shape fails with an IllegalArgumentException, a NullPointerException or a cast.
      String problem =
          e instanceof JsonProcessingException json1
              ? json1.getOriginalMessage()
              : e.getMessage() == null ? e.toString() : e.getMessage();
      throw new IllegalArgumentException(
          "the request body is not a valid " + expected + ": " + problem, e);
    }
  }
}
