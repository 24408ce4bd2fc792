from django.contrib import messages
from django.utils.translation import gettext_lazy as _


class BulkRenameView:
    button_label = _("Execute Selected")  # safe: UI label that parses as EXECUTE

    def post(self, request):
        messages.success(request, "Reset the selected interfaces")  # safe: message
        return self.redirect("Begin")  # safe: word, not SQL
