package io.sinkcoordinator.jvm;

/** The lookup behind each {@link WitEnum}'s {@code fromWitName}. */
final class WitNames {
  private WitNames() {}

  /** The constant of {@code values} whose WIT name is {@code name}, or null. */
  static <E extends Enum<E> & WitEnum> E lookup(E[] values, String name) {
    for (E e : values) {
      if (e.witName().equals(name)) {
        return e;
      }
    }
    return null;
  }
}
