// A filter left at "all" (empty) is left out of the query: the console refuses an empty
// parameter (`?job=`) rather than guess what it means, as the API does.
for (const form of document.querySelectorAll('form[method="get"]')) {
  form.addEventListener("formdata", (event) => {
    for (const [name, value] of [...event.formData.entries()]) {
      if (typeof value === "string" && !value.trim()) {
        event.formData.delete(name);
      }
    }
  });
}
